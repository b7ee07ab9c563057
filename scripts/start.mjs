// `npm start`: runs the server compiled to JavaScript (dist/server.js), in this process. When
// src/ changed since dist/ was built (an edit after `npm install`, a `git pull`), it builds
// dist/ again first (scripts/build-server.mjs, about a second), in a child process so that the
// compiler never weighs on the server's memory. The check itself only stats src/ (~5 ms).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { isFresh, ROOT } from './build-server.mjs';

if (!isFresh()) {
  // The build's own line goes to stderr: stdout carries only the server's JSON log lines.
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build-server.mjs')], { stdio: ['ignore', 2, 2] });
  if (build.status !== 0) {
    process.stderr.write(`error: building dist/ from src/ failed (${build.error?.message ?? `exit ${build.status ?? build.signal}`})\n`);
    process.exit(1);
  }
}
// Stack traces name dist/*.js lines (one file per src/*.ts file, not minified). NODE_OPTIONS=
// --enable-source-maps maps them to src/*.ts through dist/'s linked maps: 5–8 MB more at idle,
// held for every loaded module (docs/performance.md "Memory").
await import(pathToFileURL(path.join(ROOT, 'dist', 'server.js')).href);
