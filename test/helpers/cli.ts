import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, inject } from 'vitest';
import { TEST_SECRET } from './app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real operator CLI (`scripts/admin.mjs`, what `npm run admin` runs) in a child process
 * against the test database, killed after 25 s. `env` entries override the defaults; an undefined
 * value removes the variable. `onStderrLine` sees each stderr line as it is written (progress of
 * a long command).
 */
export function runCli(
  args: string[],
  opts: { dataDir: string; env?: Record<string, string | undefined>; input?: string; onStderrLine?: (line: string) => void },
): Promise<CliResult> {
  const merged: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: inject('databaseUrl'),
    SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    DATA_DIR: opts.dataDir,
    ...opts.env,
  };
  const env = Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/admin.mjs', ...args], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      const complete = stderr.lastIndexOf('\n') + 1;
      stderr += d;
      if (opts.onStderrLine) for (const line of stderr.slice(complete).split('\n').slice(0, -1)) opts.onStderrLine(line);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** An operator error: exit 1, exactly one `error:` line on stderr (after the database line, if one was opened), nothing on stdout. */
export function expectOneErrorLine(res: CliResult, message: RegExp): void {
  expect(res.code, res.stderr).toBe(1);
  expect(res.stdout).toBe('');
  const lines = res.stderr.trimEnd().split('\n').filter((line, i) => !(i === 0 && line.startsWith('using ')));
  expect(lines, res.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(message);
  expect(res.stderr).not.toMatch(/\bat .+:\d+:\d+/); // no stack trace
}
