import { execFileSync } from 'node:child_process';
import { PROJECT_ROOT } from '../helpers/process.js';

/**
 * dist/ built once, before any test spawns the server or the CLI (scripts/start.mjs,
 * scripts/admin.mjs): none of them builds it in the middle of a test, and src/ edited since
 * `npm install` is what runs.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-server.mjs'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}
