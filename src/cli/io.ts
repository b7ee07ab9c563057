/** Writes one line to stdout. The CLI never uses console (lint) and never prints a password. */
export const print = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** Writes one line to stderr. */
export const printError = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** Control characters (newlines, tabs, terminal escapes) in stored names, made harmless for one line. */
export const clean = (text: string): string => text.replace(/\p{Cc}/gu, ' ');

/** Aligned `label: value` lines. */
export function labelled(pairs: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...pairs.map(([label]) => label.length)) + 1;
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width)} ${value}`);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The value of a `--password` flag; `-` reads it from stdin (first line), which keeps it out
 * of the shell history, `ps` and the command line npm echoes.
 */
export async function passwordValue(flag: string): Promise<string> {
  if (flag !== '-') return flag;
  const line = (await readStdin()).split(/\r?\n/)[0] ?? '';
  return line;
}
