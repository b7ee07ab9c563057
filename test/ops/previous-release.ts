import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/process.js';

// The previous release (docs/releases.md): its version and commit, recorded when it was cut, and a
// checkout of its server in a temp folder, to run its processes against a newer schema.

export interface Release {
  version: string;
  commit: string;
}

export const PREVIOUS_RELEASE = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test/ops/previous-release.json'), 'utf8')) as Release;

export interface ReleaseCheckout {
  /** The folder holding the release's src/, scripts/ and package files, and a node_modules. */
  root: string;
  /** How its dependencies were had: this project's node_modules (same lockfile) or `npm ci`. */
  dependencies: 'shared' | 'installed';
  /** The names of the migrations the release ships. */
  migrations: string[];
  remove(): void;
}

const SERVER_PATHS = ['src', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];

function git(args: string[]): string {
  return execFileSync('git', ['-C', PROJECT_ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The installed packages a lockfile pins (not the project's own entry: its version changes with each release). */
function lockedDependencies(root: string): string {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  return JSON.stringify(Object.entries(lock.packages).filter(([name]) => name !== ''));
}

/** Extracts the release's server from this clone's history; fails with what to do when the commit is missing. */
export function checkOutRelease(release: Release): ReleaseCheckout {
  try {
    git(['cat-file', '-e', `${release.commit}^{commit}`]);
  } catch {
    throw new Error(`release ${release.version} (commit ${release.commit}) is not in this clone's history: a shallow clone? run \`git fetch --unshallow\``);
  }
  const root = mkdtempSync(path.join(tmpdir(), `mailplatform-release-${release.version}-`));
  try {
    const present = new Set(git(['ls-tree', '--name-only', release.commit]).split('\n'));
    const tar = path.join(root, 'release.tar');
    git(['archive', '--format=tar', '-o', tar, release.commit, ...SERVER_PATHS.filter((p) => present.has(p))]);
    execFileSync('tar', ['-xf', tar, '-C', root]);
    rmSync(tar);
    const sameLock = lockedDependencies(root) === lockedDependencies(PROJECT_ROOT);
    if (sameLock) {
      symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(root, 'node_modules'), 'dir');
    } else {
      // Its own dependencies, as its users installed them (no install scripts: the server needs
      // none of their builds, the dashboard is not served from here).
      const npm = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: root, encoding: 'utf8', timeout: 300_000 });
      if (npm.status !== 0) throw new Error(`npm ci for release ${release.version} failed: ${npm.stderr.slice(-2000)}`);
    }
    const migrations = readdirSync(path.join(root, 'src/db/migrations'))
      .filter((f) => /^\d{4}_.*\.ts$/.test(f))
      .map((f) => f.replace(/\.ts$/, ''));
    return { root, dependencies: sameLock ? 'shared' : 'installed', migrations, remove: () => rmSync(root, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
}
