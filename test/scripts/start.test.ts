import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/process.js';

/**
 * `npm start` runs scripts/start.mjs: the server compiled to dist/, built again first when src/
 * changed. Checked on a project of its own (the two scripts copied, node_modules linked) whose
 * src/server.ts prints what it was built from: its value and the migrations dist/ holds, read
 * from import.meta.url as src/db/migrate.ts reads them.
 */
describe('scripts/start.mjs: compiled start, never stale', () => {
  let root: string;

  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, 'src', file)), { recursive: true });
    writeFileSync(path.join(root, 'src', file), text);
  };
  /** One `node scripts/start.mjs`: the stand-in server's output, and what the launcher said on stderr. */
  const start = () => {
    const out = execFileSync(process.execPath, ['scripts/start.mjs'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    return JSON.parse(out) as { value: number; migrations: string[] };
  };

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'start-script-'));
    mkdirSync(path.join(root, 'scripts'));
    for (const f of ['build-server.mjs', 'start.mjs']) copyFileSync(path.join(PROJECT_ROOT, 'scripts', f), path.join(root, 'scripts', f));
    symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(root, 'node_modules'));
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ type: 'module' }));
    write('value.ts', 'export const VALUE: number = 1;\n');
    write(
      'server.ts',
      `import { readdirSync } from 'node:fs';
import { VALUE } from './value.js';
const migrations = readdirSync(new URL('./db/migrations/', import.meta.url)).filter((f: string) => f.endsWith('.js')).sort();
console.log(JSON.stringify({ value: VALUE, migrations }));
`,
    );
    write('db/migrations/0001_first.ts', 'export async function up(): Promise<void> {}\n');
    write('db/migrations/0002_second.ts', 'export async function up(): Promise<void> {}\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('builds dist/ when there is none and runs the compiled server', () => {
    expect(existsSync(path.join(root, 'dist'))).toBe(false);
    expect(start()).toEqual({ value: 1, migrations: ['0001_first.js', '0002_second.js'] });
    expect(existsSync(path.join(root, 'dist', 'server.js'))).toBe(true);
    expect(existsSync(path.join(root, 'dist', 'server.js.map'))).toBe(true);
  });

  it('builds again after a source file is edited: the edit runs, not the old build', () => {
    write('value.ts', 'export const VALUE: number = 22;\n');
    expect(start().value).toBe(22);
  });

  it('a file deleted from src/ is gone from dist/ (a removed migration never runs)', () => {
    rmSync(path.join(root, 'src', 'db', 'migrations', '0002_second.ts'));
    expect(start().migrations).toEqual(['0001_first.js']);
    expect(existsSync(path.join(root, 'dist', 'db', 'migrations', '0002_second.js'))).toBe(false);
  });

  it('does not build when nothing changed', () => {
    start();
    const before = execFileSync('stat', ['-c', '%Y.%y', path.join(root, 'dist', '.build-stamp')], { encoding: 'utf8' });
    start();
    expect(execFileSync('stat', ['-c', '%Y.%y', path.join(root, 'dist', '.build-stamp')], { encoding: 'utf8' })).toBe(before);
  });
});
