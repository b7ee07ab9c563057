import { hashPassword, insertUser, resetPassword, SignupBody } from '../../modules/accounts/index.js';
import { defineCommand } from '../command.js';
import { CliError, flagIssue, required, toggle } from '../flags.js';
import { labelled, passwordValue } from '../io.js';

const PASSWORD_HELP = 'at least 8 characters; "-" reads it from stdin';

export const createUser = defineCommand({
  name: 'create-user',
  summary: 'Create a user who can log in (the first user of an instance is its admin)',
  flags: {
    email: required('EMAIL', 'login email'),
    password: required('PASSWORD', PASSWORD_HELP),
    admin: toggle('make the user an instance admin'),
  },
  async run({ db, flags, print }) {
    const input = SignupBody.safeParse({ email: flags.email.trim(), password: await passwordValue(flags.password) });
    if (!input.success) throw new CliError(flagIssue(input.error));
    const user = await insertUser(db, {
      email: input.data.email,
      passwordHash: await hashPassword(input.data.password),
      // Without --admin the repo's rule applies: the first user of an empty instance is admin.
      isAdmin: flags.admin || undefined,
    });
    labelled([
      ['user id', user.id],
      ['email', user.email],
      ['admin', user.is_admin ? 'yes' : 'no'],
    ]).forEach(print);
  },
});

export const resetPasswordCommand = defineCommand({
  name: 'reset-password',
  summary: "Set a new password for a user and end their open sessions",
  flags: {
    email: required('EMAIL', 'the user'),
    password: required('PASSWORD', PASSWORD_HELP),
  },
  async run({ db, flags, print }) {
    const user = await resetPassword(db, flags.email.trim(), await passwordValue(flags.password));
    print(`password reset for ${user.email}`);
  },
});
