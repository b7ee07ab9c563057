// Compiles the server (src/**/*.ts) to JavaScript in dist/, one .js (and .js.map) per .ts, same
// folders: `npm install` runs it (prepare) and `npm start` (scripts/start.mjs) runs it again when
// src/ changed since. Transpile only (esbuild, no type check: `npm test` type-checks); packages
// stay in node_modules, imported as they are.
//
// dist/ sits beside src/ at the same depth, so paths the code builds from import.meta.url
// (../../web/dist, ./migrations/) point where they do under tsx. A build is written to a folder
// of its own and swapped in whole: a concurrent start never imports a half-written dist/, and a
// file deleted from src/ (a migration above all) does not live on in dist/.
//
//   node scripts/build-server.mjs            # build if src/ changed (prints what it did)
//   node scripts/build-server.mjs --force    # build anyway
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The checkout this script belongs to; tests pass another `root` (a project of their own). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP_FILE = '.build-stamp';

/** Every .ts file under root/src/ (relative, sorted). */
function sources(root) {
  return readdirSync(path.join(root, 'src'), { recursive: true })
    .filter((f) => f.endsWith('.ts'))
    .sort();
}

/**
 * What the build depends on: each source's path, size and modification time, and this script's
 * own text. Any edit, new, renamed or deleted file changes it; stat only, no reading (~5 ms).
 */
export function fingerprint(root = ROOT) {
  const hash = createHash('sha256').update(readFileSync(fileURLToPath(import.meta.url)));
  for (const file of sources(root)) {
    const st = statSync(path.join(root, 'src', file));
    hash.update(`${file}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/** Whether root/dist/ was built from root/src/ as it is now. */
export function isFresh(root = ROOT, print = fingerprint(root)) {
  try {
    return readFileSync(path.join(root, 'dist', STAMP_FILE), 'utf8') === print;
  } catch {
    return false;
  }
}

/** One build at a time per checkout (two `npm start`s at once: API and worker). */
async function withLock(root, fn) {
  const LOCK = path.join(root, '.dist-build.lock');
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      // A lock left by a build that died (older than any build takes) is taken over.
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 60_000) rmSync(LOCK, { recursive: true, force: true });
      } catch {
        // released meanwhile
      }
      if (Date.now() > deadline) throw new Error(`${LOCK} held for over 2 minutes: remove it if no build runs`);
      await sleep(50);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** Builds root/dist/ when it is missing or older than root/src/ (or always with `force`). */
export async function buildServer({ root = ROOT, force = false, log = () => {} } = {}) {
  if (!force && isFresh(root)) return { built: false };
  return withLock(root, async () => {
    const print = fingerprint(root);
    if (!force && isFresh(root, print)) return { built: false }; // built by the start that held the lock
    const { build } = await import('esbuild');
    const started = performance.now();
    const src = path.join(root, 'src');
    const dist = path.join(root, 'dist');
    const staging = path.join(root, `.dist-build-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
    const files = sources(root);
    await build({
      entryPoints: files.map((f) => path.join(src, f)),
      outdir: staging,
      outbase: src,
      format: 'esm',
      platform: 'node',
      // Keeps import attributes (`with { type: 'json' }`) and modern syntax as written.
      target: 'node20.19',
      // Linked maps: read only when Node runs with --enable-source-maps. Without the sources'
      // text (src/ is beside dist/): smaller maps, the same file and line numbers.
      sourcemap: true,
      sourcesContent: false,
      logLevel: 'warning',
    });
    writeFileSync(path.join(staging, STAMP_FILE), print);
    const old = path.join(root, `.dist-old-${process.pid}`);
    let hadOld = true;
    try {
      renameSync(dist, old);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
      hadOld = false;
    }
    renameSync(staging, dist);
    if (hadOld) rmSync(old, { recursive: true, force: true });
    const ms = Math.round(performance.now() - started);
    log(`built dist/ from ${files.length} files of src/ in ${ms} ms`);
    return { built: true, files: files.length, ms };
  });
}

/**
 * For the launchers (start.mjs, admin.mjs): builds dist/ first when src/ changed since it was
 * built (an edit after `npm install`, a `git pull`), in a child process so that the compiler never
 * weighs on the process that runs; exits 1 with one line when the build fails. Returns the URL of
 * `entry` (a path under dist/) to import. When fresh it only stats src/ (~5–15 ms).
 */
export function builtEntry(entry) {
  if (!isFresh()) {
    // The build's own line goes to stderr: stdout carries only what the program prints.
    const build = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { stdio: ['ignore', 2, 2] });
    if (build.status !== 0) {
      process.stderr.write(`error: building dist/ from src/ failed (${build.error?.message ?? `exit ${build.status ?? build.signal}`})\n`);
      process.exit(1);
    }
  }
  return pathToFileURL(path.join(ROOT, 'dist', entry)).href;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const force = process.argv.includes('--force');
  const result = await buildServer({ force, log: (line) => process.stdout.write(`${line}\n`) });
  if (!result.built) process.stdout.write('dist/ is up to date with src/\n');
}
