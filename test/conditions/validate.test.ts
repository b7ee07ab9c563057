import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCondition } from '../../src/conditions/index.js';
import { ApiError } from '../../src/http/errors.js';
import { newProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let projectId: string;
beforeAll(async () => {
  t = await createTestApp();
  projectId = (await newProject(t.app)).project.id;
});
afterAll(() => t.close());

/** The errors[] of the 422 a tree gets (the filter is always the second of group 0). */
async function errorsOf(filter: object, prefix = 'condition'): Promise<{ field: string; code: string }[]> {
  const tree = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'a@b.c' }, filter] }] };
  const err: unknown = await validateCondition(t.db.db, projectId, tree, prefix).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  const api = err as ApiError;
  expect(api.statusCode).toBe(422);
  expect(api.code).toBe('VALIDATION_ERROR');
  return (api.errors ?? []).map((e) => ({ field: e.field, code: e.code }));
}
const at = (leaf: string) => `condition.groups.0.filters.1.${leaf}`;

describe('validateCondition', () => {
  it('names an unknown field, operator or unit', async () => {
    expect(await errorsOf({ field: 'nope', operator: 'equals', value: 1 })).toEqual([{ field: at('field'), code: 'unknown_field' }]);
    expect(await errorsOf({ field: 'email.sometimes', operator: 'triggered' })).toEqual([{ field: at('field'), code: 'unknown_field' }]);
    expect((await errorsOf({ field: 'data.a', operator: 'looksLike', value: 1 }))[0]?.field).toBe(at('operator'));
    expect((await errorsOf({ field: 'event.x', operator: 'triggeredWithin', value: 1, unit: 'weeks' }))[0]?.field).toBe(at('unit'));
  });
  it('rejects an operator not valid for the field kind', async () => {
    expect(await errorsOf({ field: 'subscribed', operator: 'contains', value: 'x' })).toEqual([{ field: at('operator'), code: 'invalid_operator' }]);
    expect(await errorsOf({ field: 'event.x', operator: 'equals', value: 'x' })).toEqual([{ field: at('operator'), code: 'invalid_operator' }]);
    expect(await errorsOf({ field: 'data.x', operator: 'triggered' })).toEqual([{ field: at('operator'), code: 'invalid_operator' }]);
  });
  it('rejects missing or mistyped values and a missing unit', async () => {
    expect(await errorsOf({ field: 'data.a', operator: 'equals' })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'data.a', operator: 'equals', value: { x: 1 } })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'subscribed', operator: 'equals', value: 'yes' })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'data.a', operator: 'greaterThan', value: 'abc' })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'createdAt', operator: 'lessThan', value: 5 })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'createdAt', operator: 'within', value: -1, unit: 'days' })).toEqual([{ field: at('value'), code: 'invalid_value' }]);
    expect(await errorsOf({ field: 'event.a', operator: 'triggeredWithin', value: 3 })).toEqual([{ field: at('unit'), code: 'required' }]);
  });
  it('rejects unknown segment ids and segments of other projects', async () => {
    expect(await errorsOf({ field: 'segment.not-a-uuid', operator: 'memberOfSegment' })).toEqual([{ field: at('field'), code: 'unknown_segment' }]);
    const other = (await newProject(t.app)).project.id;
    const seg = await t.db.db.insertInto('segments').values({ project_id: other, name: 's', type: 'STATIC' }).returning('id').executeTakeFirstOrThrow();
    expect(await errorsOf({ field: `segment.${seg.id}`, operator: 'memberOfSegment' })).toEqual([{ field: at('field'), code: 'unknown_segment' }]);
  });
  it('uses the caller prefix, and reports structural errors at their path', async () => {
    expect(await errorsOf({ field: 'nope', operator: 'exists' }, 'audienceCondition')).toEqual([
      { field: 'audienceCondition.groups.0.filters.1.field', code: 'unknown_field' },
    ]);
    const err = (await validateCondition(t.db.db, projectId, { logic: 'XOR', groups: [] }, 'condition').catch((e: unknown) => e)) as ApiError;
    expect(err.errors?.[0]?.field).toBe('condition.logic');
  });
  it('answers the parsed tree when valid', async () => {
    const tree = { logic: 'OR', groups: [{ filters: [{ field: 'data.a', operator: 'exists' }], conditions: { logic: 'AND', groups: [] } }] };
    expect(await validateCondition(t.db.db, projectId, tree, 'condition')).toEqual(tree);
  });
});
