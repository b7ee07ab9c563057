import type { Kysely } from 'kysely';
import type { Database, ProjectRow } from '../../db/schema.js';
import { findUserByEmail } from '../../modules/accounts/index.js';
import { CreateProjectBody, findProjectById, insertProject } from '../../modules/projects/index.js';
import { liftProjectSuspension, suspendProject } from '../../modules/security/index.js';
import { defineCommand } from '../command.js';
import { CliError, flagIssue, optional, required } from '../flags.js';
import { clean, labelled, printError } from '../io.js';
import { listProjectsWithOwners } from '../operator.repo.js';

const projectFlag = { project: required('PROJECT_ID', 'the project id (see list-projects)') } as const;

async function userIdByEmail(db: Kysely<Database>, email: string): Promise<string> {
  const user = await findUserByEmail(db, email.trim());
  if (!user) throw new CliError(`no user with email ${email.trim()}`);
  return user.id;
}

const noProject = (id: string) => new CliError(`no project with id ${id}`);

function projectLines(project: Pick<ProjectRow, 'id' | 'name' | 'public_key' | 'secret_key' | 'disabled'>): string[] {
  return labelled([
    ['project id', project.id],
    ['name', clean(project.name)],
    ['public key', project.public_key],
    ['secret key', project.secret_key],
    ['disabled', project.disabled ? 'yes' : 'no'],
  ]);
}

export const createProject = defineCommand({
  name: 'create-project',
  summary: 'Create a project owned by an existing user and print its keys',
  flags: {
    email: required('OWNER_EMAIL', 'the owner (an existing user)'),
    name: required('NAME', 'the project name (1-100 characters)'),
  },
  async run({ db, flags, print }) {
    const input = CreateProjectBody.safeParse({ name: flags.name });
    if (!input.success) throw new CliError(flagIssue(input.error));
    const ownerId = await userIdByEmail(db, flags.email);
    projectLines(await insertProject(db, { name: input.data.name, ownerId })).forEach(print);
  },
});

export const printKeys = defineCommand({
  name: 'print-keys',
  summary: "Print a project's name and keys",
  flags: projectFlag,
  async run({ db, flags, print }) {
    const project = await findProjectById(db, flags.project.trim());
    if (!project) throw noProject(flags.project.trim());
    projectLines(project).forEach(print);
  },
});

export const listProjects = defineCommand({
  name: 'list-projects',
  summary: 'One tab-separated line per project: id, name, owner emails, enabled|disabled',
  flags: { email: optional('EMAIL', 'only the projects this user belongs to') },
  async run({ db, flags, print }) {
    const memberId = flags.email === undefined ? undefined : await userIdByEmail(db, flags.email);
    const projects = await listProjectsWithOwners(db, { memberId });
    for (const p of projects) {
      print([p.id, clean(p.name), p.ownerEmails.join(',') || '-', p.disabled ? 'disabled' : 'enabled'].join('\t'));
    }
    if (projects.length === 0) printError('no projects');
  },
});

export const enableProject = defineCommand({
  name: 'enable-project',
  summary: 'Re-enable a disabled project, recording the lift of its suspension (who: --by)',
  flags: { ...projectFlag, by: optional('NAME', 'who lifts the suspension, kept in its history (default: operator)') },
  async run({ db, flags, print }) {
    const by = flags.by?.trim() || 'operator';
    const id = flags.project.trim();
    const project = (await findProjectById(db, id)) ? await liftProjectSuspension(db, { projectId: id, by }) : undefined;
    if (!project) throw noProject(id);
    print(
      project.wasDisabled
        ? `project ${project.id} (${clean(project.name)}) enabled; suspension lifted by ${clean(by)}`
        : `project ${project.id} (${clean(project.name)}) was not disabled; nothing lifted`,
    );
  },
});

export const disableProject = defineCommand({
  name: 'disable-project',
  summary: 'Disable a project: its API answers 403 PROJECT_DISABLED, queued mail and workflows are cancelled, owners and admins emailed',
  flags: { ...projectFlag, reason: optional('REASON', 'why, shown to its members (default: disabled by an operator)') },
  async run({ db, flags, print }) {
    const reason = flags.reason?.trim() || 'disabled by an operator';
    const id = flags.project.trim();
    const project = await findProjectById(db, id);
    if (!project) throw noProject(id);
    const suspended = await db.transaction().execute((trx) => suspendProject(trx, { projectId: id, source: 'OPERATOR', reason }));
    print(suspended ? `project ${project.id} (${clean(project.name)}) disabled: ${clean(reason)}` : `project ${project.id} (${clean(project.name)}) was already disabled`);
  },
});
