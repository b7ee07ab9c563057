import { parseArgs } from 'node:util';
import type { z } from 'zod';

/** A mistake in how a command was called: printed with its usage, exit code 2. */
export class UsageError extends Error {}

/** A failure the operator can fix (unknown email, bad value): one `error:` line, exit code 1. */
export class CliError extends Error {}

/** One flag of a command: `--name VALUE` (string) or `--name` alone (boolean). */
export type FlagSpec =
  | { readonly type: 'string'; readonly required: boolean; readonly value: string; readonly description: string }
  | { readonly type: 'boolean'; readonly description: string };

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The parsed flags: required strings are present, optional ones may be undefined, booleans default to false. */
export type FlagValues<F extends FlagSpecs> = {
  readonly [K in keyof F]: F[K] extends { type: 'boolean' } ? boolean : F[K] extends { required: true } ? string : string | undefined;
};

export const required = (value: string, description: string) => ({ type: 'string', required: true, value, description }) as const;
export const optional = (value: string, description: string) => ({ type: 'string', required: false, value, description }) as const;
export const toggle = (description: string) => ({ type: 'boolean', description }) as const;

/** `--email EMAIL --password PASSWORD [--admin]` */
export function flagsSynopsis(specs: FlagSpecs): string {
  return Object.entries(specs)
    .map(([name, spec]) => {
      if (spec.type === 'boolean') return `[--${name}]`;
      return spec.required ? `--${name} ${spec.value}` : `[--${name} ${spec.value}]`;
    })
    .join(' ');
}

/** node:util's messages, made shorter; never echoes a stray value (it may be half a password). */
function usageMessage(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  const option = /'(-[^' ]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown flag ${option ?? ''}`.trim();
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return 'unexpected argument: flags are written --name VALUE (quote values that contain spaces)';
  }
  if (/argument missing/.test(message)) return `${option ?? 'a flag'} needs a value`;
  if (/ambiguous/.test(message)) return `${option ?? 'a flag'} needs a value; write --name=VALUE for a value starting with "-"`;
  if (/does not take an argument/.test(message)) return `${option ?? 'a flag'} takes no value`;
  return message.split('\n')[0] ?? message;
}

/**
 * Parses `--name value` / `--name=value` flags against `specs`. Throws a UsageError for
 * unknown flags or stray arguments and a CliError for a missing or empty required flag.
 */
export function parseFlags<F extends FlagSpecs>(specs: F, argv: readonly string[]): FlagValues<F> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, { type: spec.type }])),
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new UsageError(usageMessage(err));
  }
  const values: Record<string, string | boolean | undefined> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = parsed.values[name];
    if (spec.type === 'boolean') {
      values[name] = value === true;
      continue;
    }
    const text = typeof value === 'string' ? value : undefined;
    if (spec.required && (text === undefined || text.trim() === '')) {
      throw new CliError(`missing --${name} ${spec.value} (${spec.description})`);
    }
    values[name] = text;
  }
  // Checked above: every flag of `specs` is set with its spec's type, required ones non-empty.
  return values as FlagValues<F>;
}

/** A zod failure over flag values as `--password: Password must be at least 8 characters` (never the value). */
export function flagIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid value';
  const flag = issue.path[0];
  return flag === undefined ? issue.message : `--${String(flag)}: ${issue.message}`;
}
