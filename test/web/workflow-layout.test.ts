import { describe, expect, it } from 'vitest';
import {
  buildGraph,
  describeStep,
  insertTarget,
  isAutoPosition,
  layoutGraph,
  outputsOf,
  pinnedPosition,
  slotId,
  type StepLike,
  STEP_SIZE,
  type TransitionLike,
  typesFor,
} from '../../web/src/pages/workflows/graph.js';

const step = (id: string, type: StepLike['type'], config: Record<string, unknown> = {}, position = { x: 0, y: 0 }): StepLike => ({ id, type, config, position });
const tr = (id: string, fromStepId: string, toStepId: string, branch: TransitionLike['branch'] = null): TransitionLike => ({ id, fromStepId, toStepId, branch });

describe('workflow graph', () => {
  it('gives each step type its outputs', () => {
    expect(outputsOf('TRIGGER', {})).toEqual([null]);
    expect(outputsOf('CONDITION', {})).toEqual(['yes', 'no']);
    expect(outputsOf('WAIT_FOR_EVENT', { eventName: 'x' })).toEqual(['event']);
    expect(outputsOf('WAIT_FOR_EVENT', { eventName: 'x', timeout: 60 })).toEqual(['event', 'timeout']);
    expect(outputsOf('EXIT', {})).toEqual([]);
  });

  it('labels branch edges and adds a "+" slot on every open output', () => {
    const steps = [step('t', 'TRIGGER'), step('c', 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }), step('d', 'DELAY', { amount: 1, unit: 'hours' }), step('x', 'EXIT')];
    const g = buildGraph(steps, [tr('1', 't', 'c'), tr('2', 'c', 'd', 'yes'), tr('3', 'c', 'x', 'no')]);
    expect(g.edges.filter((e) => e.transitionId).map((e) => [e.source, e.target, e.label])).toEqual([
      ['t', 'c', undefined],
      ['c', 'd', 'Yes'],
      ['c', 'x', 'No'],
    ]);
    // The DELAY is a leaf: one slot below it; the EXIT has none; the CONDITION's branches are used.
    const slots = g.nodes.filter((n) => n.kind === 'slot').map((n) => n.id);
    expect(slots).toEqual([slotId('d', null)]);
    expect(g.edges.find((e) => e.target === slotId('d', null))?.transitionId).toBeUndefined();
  });

  it('offers the missing branch of a half-connected condition and the timeout of a wait', () => {
    const g = buildGraph([step('t', 'TRIGGER'), step('c', 'CONDITION'), step('w', 'WAIT_FOR_EVENT', { eventName: 'paid', timeout: 3600 })], [tr('1', 't', 'c'), tr('2', 'c', 'w', 'yes'), tr('3', 'w', 't', 'event')]);
    const slots = g.nodes.filter((n) => n.kind === 'slot');
    expect(slots.map((n) => n.id)).toEqual([slotId('c', 'no'), slotId('w', 'timeout')]);
    expect(g.edges.filter((e) => !e.transitionId).map((e) => e.label)).toEqual(['No', 'Timeout']);
  });

  it('ignores transitions to steps that are not in the list', () => {
    const g = buildGraph([step('t', 'TRIGGER')], [tr('1', 't', 'gone')]);
    expect(g.edges.filter((e) => e.transitionId)).toEqual([]);
    expect(g.nodes.map((n) => n.id)).toEqual(['t', slotId('t', null)]);
  });
});

describe('insert target (one request: POST /workflows/:id/steps with insert or after)', () => {
  it('on an edge: the transition to put the step on', () => {
    expect(insertTarget({ kind: 'edge', transition: tr('9', 'c', 'd', 'no') }, 'DELAY', { amount: 1, unit: 'days' })).toEqual({ insert: { transitionId: '9' } });
    expect(insertTarget({ kind: 'edge', transition: tr('9', 'a', 'b') }, 'CONDITION', {})).toEqual({ insert: { transitionId: '9' } });
  });

  it('on a slot: the open output (step and branch) to link from', () => {
    expect(insertTarget({ kind: 'slot', fromStepId: 'c', branch: 'yes' }, 'EXIT', {})).toEqual({ after: { stepId: 'c', branch: 'yes' } });
    expect(insertTarget({ kind: 'slot', fromStepId: 'c', branch: null }, 'DELAY', {})).toEqual({ after: { stepId: 'c', branch: null } });
  });

  it('EXIT only at a leaf: not offered on an edge, refused there', () => {
    expect(typesFor({ kind: 'edge', transition: tr('9', 'a', 'b') })).not.toContain('EXIT');
    expect(typesFor({ kind: 'slot', fromStepId: 'a', branch: null })).toContain('EXIT');
    expect(() => insertTarget({ kind: 'edge', transition: tr('9', 'a', 'b') }, 'EXIT', {})).toThrow();
  });
});

describe('layout', () => {
  const steps = [step('t', 'TRIGGER'), step('c', 'CONDITION', {}, { x: 0, y: 150 }), step('a', 'DELAY', { amount: 1, unit: 'hours' }, { x: 0, y: 300 }), step('b', 'EXIT', {}, { x: 0, y: 450 })];
  const transitions = [tr('1', 't', 'c'), tr('2', 'c', 'a', 'yes'), tr('3', 'c', 'b', 'no')];

  it('lays out top to bottom: each step below its predecessor, branches side by side', () => {
    const pos = layoutGraph(buildGraph(steps, transitions));
    const p = (id: string) => pos.get(id) ?? { x: NaN, y: NaN };
    expect(p('c').y).toBeGreaterThan(p('t').y + STEP_SIZE.height);
    expect(p('a').y).toBeGreaterThan(p('c').y + STEP_SIZE.height);
    expect(p('a').y).toBe(p('b').y);
    expect(Math.abs(p('a').x - p('b').x)).toBeGreaterThanOrEqual(STEP_SIZE.width);
    // The leaf's slot is under the DELAY.
    expect(pos.get(slotId('a', null))?.y).toBeGreaterThan(p('a').y);
  });

  it('keeps a position the user dragged, and its slots follow it', () => {
    const moved = steps.map((s) => (s.id === 'a' ? { ...s, position: { x: 900, y: 40 } } : s));
    const pos = layoutGraph(buildGraph(moved, transitions));
    expect(pos.get('a')).toEqual({ x: 900, y: 40 });
    const slot = pos.get(slotId('a', null)) ?? { x: NaN, y: NaN };
    expect(slot.y).toBeGreaterThan(40 + STEP_SIZE.height);
    expect(slot.x).toBeGreaterThan(900);
    // The others are still laid out automatically.
    expect(pos.get('t')).toEqual(layoutGraph(buildGraph(steps, transitions)).get('t'));
  });

  it('tells the server\'s stacked positions from dragged ones', () => {
    expect(isAutoPosition({ x: 0, y: 0 })).toBe(true);
    expect(isAutoPosition({ x: 0, y: 450 })).toBe(true);
    expect(isAutoPosition({ x: 0, y: 451 })).toBe(false);
    expect(isAutoPosition({ x: 12, y: 150 })).toBe(false);
    expect(pinnedPosition({ x: 0.2, y: 299.6 })).toEqual({ x: 1, y: 300 });
    expect(pinnedPosition({ x: 40.4, y: 10 })).toEqual({ x: 40, y: 10 });
  });
});

describe('step summaries', () => {
  it('says what each step does', () => {
    expect(describeStep('TRIGGER', {}, { eventName: 'signup' })).toBe('When “signup” is tracked');
    expect(describeStep('DELAY', { amount: 1, unit: 'hours' })).toBe('Wait 1 hour');
    expect(describeStep('DELAY', { amount: 3, unit: 'days' })).toBe('Wait 3 days');
    expect(describeStep('WAIT_FOR_EVENT', { eventName: 'paid', timeout: 7200 })).toBe('Until “paid”, at most 2 hours');
    expect(describeStep('CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' })).toBe('If data.plan equals pro');
    const two = { logic: 'AND', groups: [{ filters: [{ field: 'event.plan', operator: 'equals', value: 'pro' }, { field: 'email', operator: 'contains', value: '@' }] }] };
    expect(describeStep('CONDITION', { condition: two })).toBe('If all of 2 conditions match');
    const nested = { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }, { filters: [], conditions: two }] };
    expect(describeStep('CONDITION', { condition: nested })).toBe('If the condition matches (3 conditions in groups)');
    expect(describeStep('CONDITION', { condition: { ...nested, groups: nested.groups.slice(0, 1) } })).toBe('If email contains @');
    expect(describeStep('UPDATE_CONTACT', { updates: { tier: 'gold', old: null }, subscribed: false })).toBe('Set tier = gold, unset old; unsubscribe');
    expect(describeStep('SEND_EMAIL', {}, { templateName: 'Welcome' })).toBe('“Welcome”');
    expect(describeStep('WEBHOOK', { url: 'https://x.test/h', method: 'PUT' })).toBe('PUT https://x.test/h');
  });
});
