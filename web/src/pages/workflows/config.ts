import { type ApiFilter, type ApiTree, type Card, cardToTree, type DataTypes, emptyCard, type PathIndex, placeApiErrors, type Problem, treeToCard, validateCard } from '../segments/conditions.js';

/**
 * A step's config as the side panel's form holds it (strings, as typed) and back, with the checks
 * the form can make before the API's own (which answers 422 with `config.<key>` fields).
 * CONDITION steps are edited with the segment builder (web/src/pages/segments/conditions.ts, in
 * 'workflow' mode): the draft holds its card.
 */
type StepType = 'TRIGGER' | 'SEND_EMAIL' | 'DELAY' | 'WAIT_FOR_EVENT' | 'CONDITION' | 'WEBHOOK' | 'UPDATE_CONTACT' | 'EXIT';

export interface ConfigDraft {
  templateId: string;
  recipientType: 'CONTACT' | 'CUSTOM';
  customEmail: string;
  amount: string;
  unit: 'minutes' | 'hours' | 'days';
  eventName: string;
  timeoutAmount: string;
  timeoutUnit: 'minutes' | 'hours' | 'days';
  /** CONDITION: the builder's card (a single-filter config is a one-row card). */
  condition: Card;
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers: string;
  body: string;
  updates: string;
  subscription: 'none' | 'subscribe' | 'unsubscribe';
  reason: string;
}

export const UNIT_SECONDS = { minutes: 60, hours: 3600, days: 86_400 } as const;
export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');
const isUnit = (v: unknown): v is 'minutes' | 'hours' | 'days' => v === 'minutes' || v === 'hours' || v === 'days';

function splitSeconds(s: number): [string, 'minutes' | 'hours' | 'days'] {
  if (s % 86_400 === 0) return [String(s / 86_400), 'days'];
  if (s % 3600 === 0) return [String(s / 3600), 'hours'];
  return [String(s / 60), 'minutes'];
}

/** The literal of a typed value: numbers, true/false and null as JSON, anything else as text. */
export function parseLiteral(text: string): string | number | boolean | null {
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  // A leading zero (a zip code, 01234) stays text.
  if (/^-?(0|[1-9]\d*)(\.\d+)?$/.test(t)) return Number(t);
  return text;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isTree = (v: unknown): v is ApiTree => isRecord(v) && (v.logic === 'AND' || v.logic === 'OR') && Array.isArray(v.groups) && v.groups.every((g) => isRecord(g) && Array.isArray(g.filters));

/**
 * A CONDITION config as the builder's card: `{condition: tree}` as it is, a single filter as a
 * one-row card, anything else (a new step) as one empty row.
 */
export function conditionCard(config: Record<string, unknown>): Card {
  if ('condition' in config) return isTree(config.condition) ? treeToCard(config.condition) : emptyCard();
  if (typeof config.field === 'string' && config.field !== '' && typeof config.operator === 'string') {
    return treeToCard({ logic: 'AND', groups: [{ filters: [config as unknown as ApiFilter] }] });
  }
  return emptyCard();
}

/** Where the condition of the last submit went: to place the API's 422 on the builder's rows. */
export interface SentCondition {
  /** Sent as one filter (`config.field|operator|value|unit`) rather than `{condition}`. */
  single: boolean;
  paths: PathIndex;
  rootId: string;
}

/**
 * The API's 422 errors on a CONDITION config as the builder's problems: `config.condition.<path>`
 * on the row sent there, a single filter's `config.field|operator|value|unit` on its one row,
 * anything else about the condition on the whole card.
 */
export function conditionProblems(errors: readonly { field: string; message: string }[], sent: SentCondition): Problem[] {
  const [onlyPath] = [...sent.paths.values()];
  const named = sent.single
    ? errors.map((e) => ({ ...e, field: e.field.replace(/^config(?=\.(field|operator|value|unit)$|$)/, onlyPath ? `config.condition.${onlyPath}` : 'config.condition') }))
    : errors;
  return placeApiErrors(named, 'config.condition', sent.paths, sent.rootId);
}

export function toDraft(config: Record<string, unknown>): ConfigDraft {
  const recipient = (config.recipient ?? {}) as { type?: string; customEmail?: string };
  const [timeoutAmount, timeoutUnit] = typeof config.timeout === 'number' ? splitSeconds(config.timeout) : ['', 'hours' as const];
  const headers = (config.headers ?? {}) as Record<string, string>;
  const updates = (config.updates ?? {}) as Record<string, unknown>;
  return {
    templateId: str(config.templateId),
    recipientType: recipient.type === 'CUSTOM' ? 'CUSTOM' : 'CONTACT',
    customEmail: str(recipient.customEmail),
    amount: config.amount === undefined ? '1' : str(config.amount),
    unit: isUnit(config.unit) ? config.unit : 'hours',
    eventName: str(config.eventName),
    timeoutAmount,
    timeoutUnit,
    condition: conditionCard(config),
    url: str(config.url),
    method: (WEBHOOK_METHODS as readonly string[]).includes(str(config.method)) ? (config.method as ConfigDraft['method']) : 'POST',
    headers: Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
    body: config.body === undefined ? '' : JSON.stringify(config.body, null, 2),
    updates: Object.entries(updates)
      .map(([k, v]) => `${k} = ${v === null ? 'null' : String(v)}`)
      .join('\n'),
    subscription: config.subscribed === true ? 'subscribe' : config.subscribed === false ? 'unsubscribe' : 'none',
    reason: str(config.reason),
  };
}

export interface FromDraft {
  config: Record<string, unknown>;
  /** The form's own errors by field (`config.<key>`); CONDITION: `config.condition` while `problems` is not empty. */
  errors: Record<string, string>;
  /** CONDITION: the builder's own problems, and where its rows went (for the API's 422). */
  condition?: { problems: Problem[]; sent: SentCondition };
}

/**
 * The config to send, or the form's own errors. `types`: the seen types of data and event keys
 * (the builder's field options), which type a CONDITION's values.
 */
export function fromDraft(type: StepType, d: ConfigDraft, types: DataTypes = new Map()): FromDraft {
  const errors: Record<string, string> = {};
  let config: Record<string, unknown> = {};
  let condition: FromDraft['condition'];
  const positive = (text: string, field: string): number | undefined => {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || n <= 0) {
      errors[field] = 'A number greater than 0';
      return undefined;
    }
    return n;
  };
  switch (type) {
    case 'TRIGGER':
      break;
    case 'SEND_EMAIL':
      if (!d.templateId) errors['config.templateId'] = 'Choose a template';
      config.templateId = d.templateId;
      if (d.recipientType === 'CUSTOM') {
        if (!d.customEmail.trim()) errors['config.recipient.customEmail'] = 'Required for a custom recipient';
        config.recipient = { type: 'CUSTOM', customEmail: d.customEmail.trim() };
      }
      break;
    case 'DELAY':
      config.amount = positive(d.amount, 'config.amount');
      config.unit = d.unit;
      break;
    case 'WAIT_FOR_EVENT':
      if (!d.eventName.trim()) errors['config.eventName'] = 'Required';
      config.eventName = d.eventName.trim();
      if (d.timeoutAmount.trim() !== '') {
        const n = positive(d.timeoutAmount, 'config.timeout');
        if (n !== undefined) config.timeout = Math.round(n * UNIT_SECONDS[d.timeoutUnit]);
      }
      break;
    case 'CONDITION': {
      const card = d.condition;
      const { tree, paths } = cardToTree(card, types, 'workflow');
      const problems = validateCard(card, types, 'workflow');
      if (card.items.length === 0) problems.push({ id: card.id, part: 'card', message: 'Add a condition: the step chooses yes or no by it' });
      if (problems.length > 0) errors['config.condition'] = 'Complete the condition';
      // One filter is stored in the single-filter form (as steps always were); anything more as a tree.
      const [only] = tree.groups;
      const [filter] = only?.filters ?? [];
      const single = tree.groups.length === 1 && only?.filters.length === 1 && !only.conditions && filter !== undefined;
      config = single ? { ...filter } : { condition: tree };
      condition = { problems, sent: { single, paths, rootId: card.id } };
      break;
    }
    case 'WEBHOOK': {
      config.url = d.url.trim();
      if (!config.url) errors['config.url'] = 'Required';
      config.method = d.method;
      const headers: Record<string, string> = {};
      for (const line of d.headers.split('\n')) {
        if (!line.trim()) continue;
        const i = line.indexOf(':');
        if (i <= 0) {
          errors['config.headers'] = `“${line.trim()}” is not “Name: value”`;
          break;
        }
        headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      if (Object.keys(headers).length) config.headers = headers;
      if (d.body.trim()) {
        try {
          config.body = JSON.parse(d.body) as unknown;
        } catch {
          errors['config.body'] = 'Not valid JSON';
        }
      }
      break;
    }
    case 'UPDATE_CONTACT': {
      const updates: Record<string, string | number | boolean | null> = {};
      for (const line of d.updates.split('\n')) {
        if (!line.trim()) continue;
        const i = line.indexOf('=');
        if (i <= 0) {
          errors['config.updates'] = `“${line.trim()}” is not “key = value”`;
          break;
        }
        updates[line.slice(0, i).trim()] = parseLiteral(line.slice(i + 1).trim());
      }
      if (Object.keys(updates).length) config.updates = updates;
      if (d.subscription !== 'none') config.subscribed = d.subscription === 'subscribe';
      if (!config.updates && config.subscribed === undefined) errors['config.updates'] = 'Set a key or change the subscription';
      break;
    }
    case 'EXIT':
      if (d.reason.trim()) config.reason = d.reason.trim();
      break;
  }
  return { config, errors, ...(condition && { condition }) };
}

/** A sensible starting config per type (the form opens on it). */
export function defaultConfig(type: StepType): Record<string, unknown> {
  switch (type) {
    case 'DELAY':
      return { amount: 1, unit: 'days' };
    case 'CONDITION':
      return {};
    case 'WEBHOOK':
      return { url: '', method: 'POST' };
    default:
      return {};
  }
}
