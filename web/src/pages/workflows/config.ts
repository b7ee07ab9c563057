
/**
 * A step's config as the side panel's form holds it (strings, as typed) and back, with the checks
 * the form can make before the API's own (which answers 422 with `config.<key>` fields).
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
  conditionMode: 'filter' | 'tree';
  field: string;
  operator: string;
  value: string;
  valueUnit: '' | 'minutes' | 'hours' | 'days';
  tree: string;
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
/** Operators taking no value; those taking a number and a unit. */
export const NO_VALUE_OPERATORS = new Set(['exists', 'notExists', 'triggered', 'notTriggered']);
export const UNIT_OPERATORS = new Set(['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin']);
export const ALL_OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'exists',
  'notExists',
  'within',
  'olderThan',
  'triggered',
  'notTriggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggeredWithin',
  'memberOfSegment',
  'notMemberOfSegment',
];

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
    conditionMode: 'condition' in config ? 'tree' : 'filter',
    field: str(config.field),
    operator: str(config.operator) || 'equals',
    value: config.value === undefined ? '' : typeof config.value === 'object' ? JSON.stringify(config.value) : str(config.value),
    valueUnit: isUnit(config.unit) ? config.unit : '',
    tree: 'condition' in config ? JSON.stringify(config.condition, null, 2) : '',
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

/** The config to send, or the form's own errors by field (`config.<key>`). */
export function fromDraft(type: StepType, d: ConfigDraft): { config: Record<string, unknown>; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const config: Record<string, unknown> = {};
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
    case 'CONDITION':
      if (d.conditionMode === 'tree') {
        try {
          config.condition = JSON.parse(d.tree) as unknown;
        } catch {
          errors['config.condition'] = 'Not valid JSON';
        }
        break;
      }
      if (!d.field.trim()) errors['config.field'] = 'Required';
      config.field = d.field.trim();
      config.operator = d.operator;
      if (UNIT_OPERATORS.has(d.operator)) {
        config.value = positive(d.value, 'config.value');
        config.unit = d.valueUnit || 'days';
      } else if (!NO_VALUE_OPERATORS.has(d.operator)) {
        config.value = parseLiteral(d.value);
      }
      break;
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
  return { config, errors };
}

/** A sensible starting config per type (the form opens on it). */
export function defaultConfig(type: StepType): Record<string, unknown> {
  switch (type) {
    case 'DELAY':
      return { amount: 1, unit: 'days' };
    case 'CONDITION':
      return { field: '', operator: 'equals', value: '' };
    case 'WEBHOOK':
      return { url: '', method: 'POST' };
    default:
      return {};
  }
}
