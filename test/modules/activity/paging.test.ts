import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { feed, type ItemJson, type ListJson } from './helpers.js';

let t: TestApp;
let project: TestProject;
let contactId: string;
let workflowId: string;
const instants: Date[] = [];

/** Sources of one instant: 5 events (one statement, as a group commit writes them), a start and an end of executions. */
async function fillInstant(at: Date, events = 5) {
  await t.db.db
    .insertInto('events')
    .values(Array.from({ length: events }, (_, i) => ({ project_id: project.id, contact_id: contactId, name: `tick_${i % 2}`, created_at: at })))
    .execute();
  await t.db.db
    .insertInto('workflow_executions')
    .values([
      { project_id: project.id, workflow_id: workflowId, contact_id: contactId, status: 'CANCELLED', started_at: at },
      { project_id: project.id, workflow_id: workflowId, contact_id: contactId, status: 'COMPLETED', started_at: new Date(at.getTime() - 86_400_000 * 10), completed_at: at },
    ])
    .execute();
}

beforeAll(async () => {
  t = await createTestApp();
  project = (await newProject(t.app)).project;
  contactId = (await t.db.db.insertInto('contacts').values({ project_id: project.id, email: 'pager@act.example', subscribed: true }).returning('id').executeTakeFirstOrThrow()).id;
  workflowId = (
    await t.db.db.insertInto('workflows').values({ project_id: project.id, name: 'Pager', trigger_config: JSON.stringify({ eventName: 'tick' }) }).returning('id').executeTakeFirstOrThrow()
  ).id;
  // 20 instants a minute apart, within the last hour (the ended executions started 10 days before: outside the tested window).
  for (let i = 0; i < 20; i++) instants.push(new Date(Date.now() - 3600_000 + i * 60_000 + 0.123));
  for (const at of instants) await fillInstant(at);
});
afterAll(() => t.close());

/** The feed's order, as the API promises it: newest first, ties by the id's source then the row id. */
const RANK: Record<string, number> = { 'workflow.completed': 5, 'workflow.started': 4 };
const rowId = (item: ItemJson) => item.id.split(':')[0] ?? '';
function inFeedOrder(a: ItemJson, b: ItemJson): boolean {
  if (a.timestamp !== b.timestamp) return a.timestamp > b.timestamp;
  const ra = RANK[a.type] ?? 1;
  const rb = RANK[b.type] ?? 1;
  return ra !== rb ? ra > rb : rowId(a) > rowId(b);
}

describe('cursor paging under concurrent inserts', () => {
  it('never skips or repeats an item while new activity arrives, also at the instants being paged', async () => {
    // The window is fixed so that the list does not depend on when each page is read.
    const window = `startDate=${new Date(Date.now() - 7 * 86_400_000).toISOString()}&endDate=${new Date(Date.now() + 3600_000).toISOString()}`;
    const before = await feed(t.app, project, `${window}&limit=100`);
    expect(before.total).toBe(140);
    const initial = [...before.data, ...(await feed(t.app, project, `${window}&limit=100&cursor=${before.cursor}`)).data];
    expect(initial).toHaveLength(140);

    const seen: ItemJson[] = [];
    let cursor: string | null = null;
    let writes = 0;
    for (let pages = 0; pages < 100; pages++) {
      const read = feed(t.app, project, `${window}&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      // Concurrently: tracked events (now), and rows at an instant already listed or still to come.
      const at = instants[(pages * 7) % instants.length] ?? new Date();
      const write = Promise.all([
        t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: { email: 'pager@act.example', event: 'tick_now' } }),
        fillInstant(at, 2),
      ]).then(() => writes++);
      const [page] = (await Promise.all([read, write])) as [ListJson, number];
      seen.push(...page.data);
      if (!page.hasMore) break;
      cursor = page.cursor;
    }
    expect(writes).toBeGreaterThan(15);
    const ids = seen.map((i) => i.id);
    expect(new Set(ids).size, 'an item was listed twice').toBe(ids.length);
    const missing = initial.filter((i) => !ids.includes(i.id));
    expect(missing, 'items present before paging began were skipped').toEqual([]);
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1], seen[i]];
      if (a && b) expect(inFeedOrder(a, b), `${a.id} before ${b.id}`).toBe(true);
    }
  }, 60_000);

  it('keeps the window of the first page on later pages when the dates are defaulted', async () => {
    const first = await feed(t.app, project, 'types=workflow.completed&limit=1');
    const decoded = Buffer.from(first.cursor ?? '', 'base64url').toString('utf8').split('|');
    expect(decoded).toHaveLength(4);
    // The first page's window start (now - 30 days), in the cursor.
    expect(Math.abs(new Date(decoded[3] ?? '').getTime() - (Date.now() - 30 * 86_400_000))).toBeLessThan(60_000);
    // The start a cursor carries is the one later pages use: moved to the 11th instant, older items are out.
    const from = instants[10] ?? new Date();
    const moved = Buffer.from([...decoded.slice(0, 3), `${from.toISOString().slice(0, 23)}000Z`].join('|')).toString('base64url');
    const page = await feed(t.app, project, `types=workflow.completed&limit=100&cursor=${moved}`);
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.every((i) => i.timestamp >= from.toISOString())).toBe(true);
    // An explicit startDate wins over the cursor's.
    const explicit = await feed(t.app, project, `types=workflow.completed&limit=100&cursor=${moved}&startDate=${new Date(Date.now() - 7 * 86_400_000).toISOString()}`);
    expect(explicit.data.some((i) => i.timestamp < from.toISOString())).toBe(true);
  });
});
