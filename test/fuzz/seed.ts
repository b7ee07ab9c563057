import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { Db } from '../../src/db/connection.js';
import type { Config } from '../../src/config.js';
import { bearer, createProject, signUp, type SignedInUser, type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { addVerifiedDomain } from '../modules/emails/helpers.js';

/**
 * What the fuzzed requests act on: the signed-in user's project (keys and session), a second
 * project of theirs for the operations that would take the first away (delete, reset, rotate
 * keys, remove a member), another user's project, and real ids of each kind of resource so
 * that path parameters sometimes name something that exists.
 */
export interface FuzzWorld {
  user: SignedInUser;
  project: TestProject;
  /** The user's second project: destructive operations on a project act on this one. */
  victim: TestProject;
  /** A session that logout may end. */
  logoutCookie: string;
  /** Another user's project (an X-Project-Id the session is not a member of; a key of another project). */
  stranger: TestProject;
  from: string;
  /** Real values of path parameters, by the path segment before the parameter. */
  ids: Record<string, string[]>;
}

async function post(app: FastifyInstance, project: TestProject, url: string, payload: object): Promise<Record<string, unknown>> {
  const res = await app.inject({ method: 'POST', url, headers: bearer(project.secret), payload });
  expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(300);
  return res.json<Record<string, unknown>>();
}

const idOf = (answer: Record<string, unknown>): string => String(answer.id);

export async function seedWorld(app: FastifyInstance, t: { db: Db; config: Config }): Promise<FuzzWorld> {
  const user = await signUp(app);
  const project = await createProject(app, user, 'Fuzz');
  const victim = await createProject(app, user, 'Victim');
  const logoutCookie = (await signUp(app)).cookie;
  const stranger = await createProject(app, await signUp(app), 'Stranger');
  const { domain } = await addVerifiedDomain(t, project.id);
  const from = `hello@${domain}`;

  const contacts: string[] = [];
  const emails: string[] = [];
  for (let i = 0; i < 3; i++) {
    const email = uniqueEmail('seed');
    emails.push(email);
    contacts.push(idOf(await post(app, project, '/contacts', { email, data: { plan: 'pro', seats: i } })));
  }
  await app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: { email: emails[0], event: 'signed_up', data: { plan: 'pro' } } });
  const template = idOf(await post(app, project, '/templates', { name: 'Seed', subject: 'Hi', body: '<p>Hello {{firstName}}</p>', from }));
  const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
  const dynamic = idOf(await post(app, project, '/segments', { name: 'Pros', condition }));
  const fixed = idOf(await post(app, project, '/segments', { name: 'Hand-picked', type: 'STATIC' }));
  const campaign = idOf(await post(app, project, '/campaigns', { name: 'Seed', subject: 'News', body: '<p>News</p>', from }));
  const workflow = idOf(await post(app, project, '/workflows', { name: 'Seed', eventName: 'signed_up' }));
  const delay = idOf(await post(app, project, `/workflows/${workflow}/steps`, { type: 'DELAY', config: { amount: 1, unit: 'hours' } }));
  const detail = (await app.inject({ method: 'GET', url: `/workflows/${workflow}`, headers: bearer(project.secret) })).json<{ steps?: { id: string; type: string }[]; transitions?: { id: string }[] }>();
  const steps = (detail.steps ?? []).map((s) => s.id);
  const transitions = (detail.transitions ?? []).map((s) => s.id);
  const execution = await app.inject({ method: 'POST', url: `/workflows/${workflow}/executions`, headers: bearer(project.secret), payload: { email: emails[1] } });
  const executions = execution.statusCode < 300 ? [idOf(execution.json())] : [];
  const endpoint = idOf(await post(app, project, '/webhook-endpoints', { url: 'https://hooks.example.com/seed', events: ['email.sent'] }));
  const suppressed = uniqueEmail('suppressed');
  await post(app, project, '/suppressions', { email: suppressed });
  const sent = await post(app, project, '/v1/send', { to: emails[2], subject: 'Seed', body: '<p>Seed</p>', from });
  const sentEmails = ((sent.data as { emails?: { email?: string }[] } | undefined)?.emails ?? []).flatMap((e) => (e.email ? [e.email] : []));
  const invitation = await app.inject({ method: 'POST', url: `/projects/${victim.id}/members`, headers: { cookie: user.cookie }, payload: { email: uniqueEmail('invitee'), role: 'MEMBER' } });
  const domains = (await t.db.db.selectFrom('domains').select('id').where('project_id', '=', project.id).execute()).map((d) => d.id);

  return {
    user,
    project,
    victim,
    logoutCookie,
    stranger,
    from,
    ids: {
      contacts,
      contact: contacts,
      templates: [template],
      segments: [dynamic, fixed],
      campaigns: [campaign],
      workflows: [workflow],
      steps: [delay, ...steps],
      transitions,
      executions,
      'webhook-endpoints': [endpoint],
      suppressions: [suppressed],
      emails: sentEmails,
      invitations: invitation.statusCode < 300 ? [String(invitation.json<{ invitation?: { id?: string } }>().invitation?.id)] : [],
      members: [user.id],
      domains,
      fields: ['plan', 'seats'],
      events: ['signed_up'],
      project: [project.id],
      'oauth-identities': ['github', 'google'],
      oauth: ['github', 'google'],
    },
  };
}
