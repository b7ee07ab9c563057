import type { Kysely } from 'kysely';
import type { Database, ProjectRow } from '../../db/schema.js';
import { findUserByEmail } from '../../modules/accounts/index.js';
import { CreateProjectBody, findProjectById, insertProject } from '../../modules/projects/index.js';
import { defineCommand } from '../command.js';
import { CliError, flagIssue, optional, required } from '../flags.js';
import { clean, labelled, printError } from '../io.js';
import { listProjectsWithOwners, setProjectDisabled } from '../operator.repo.js';

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

function toggleProject(name: string, disabled: boolean) {
  return defineCommand({
    name,
    summary: disabled
      ? 'Disable a project: its API answers 403 PROJECT_DISABLED until re-enabled'
      : 'Re-enable a disabled project',
    flags: projectFlag,
    async run({ db, flags, print }) {
      const project = await setProjectDisabled(db, flags.project.trim(), disabled);
      if (!project) throw noProject(flags.project.trim());
      print(`project ${project.id} (${clean(project.name)}) ${disabled ? 'disabled' : 'enabled'}`);
    },
  });
}

export const enableProject = toggleProject('enable-project', false);
export const disableProject = toggleProject('disable-project', true);
