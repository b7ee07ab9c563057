import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { postgresAccount, reachableInstallation, searchableBy } from '../../src/db/postgres-access.js';

// As root, PostgreSQL runs as the unprivileged "postgres" user. A clone in a folder that user
// cannot search (under /root, or a `mktemp -d` folder: 0700) must still work, without any
// folder's mode being changed. Only meaningful as root.
const asRoot = process.getuid?.() === 0;

const temps: string[] = [];
const tempDir = (label: string, mode = 0o700) => {
  const dir = mkdtempSync(path.join(tmpdir(), `mailplatform-access-${label}-`));
  chmodSync(dir, mode);
  temps.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

/** The mode of `dir` and of every folder above it. */
function modesUpFrom(dir: string): Record<string, number> {
  const modes: Record<string, number> = {};
  for (let current = dir; ; current = path.dirname(current)) {
    modes[current] = statSync(current).mode;
    if (path.dirname(current) === current) return modes;
  }
}

describe.skipIf(!asRoot)('embedded PostgreSQL as root', () => {
  it('runs a cluster whose folder sits in a 0700 folder, changing no mode above it', { timeout: 120_000 }, async () => {
    const parent = tempDir('data');
    const account = postgresAccount();
    if (!account) throw new Error('root has a postgres account');
    expect(searchableBy(parent, account)).toBe(false);
    const before = modesUpFrom(parent);

    const dir = path.join(parent, 'postgres');
    for (const round of ['initialised', 'reused']) {
      const db = await startEmbeddedPostgres({ dir });
      try {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        const { rows } = await client.query<{ user: string; round: string }>('SELECT current_user AS user, $1::text AS round', [round]);
        await client.end();
        expect(rows).toEqual([{ user: 'postgres', round }]);
      } finally {
        await db.stop();
      }
      expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(false);
    }
    expect(statSync(dir).uid).toBe(account.uid);
    expect(modesUpFrom(parent)).toEqual(before);
  });
});

describe.skipIf(!asRoot)('PostgreSQL binaries the postgres user cannot reach', () => {
  const account = asRoot ? postgresAccount() : undefined;

  /** A tiny stand-in installation (unique, so its copy is this run's own): bin/postgres prints "ran". */
  function fakeInstallation(parentMode: number): string {
    const dir = path.join(tempDir('bin', parentMode), 'native');
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    mkdirSync(path.join(dir, 'lib'), { mode: 0o700 });
    writeFileSync(path.join(dir, 'bin', 'postgres'), '#!/bin/sh\necho ran\n', { mode: 0o700 });
    writeFileSync(path.join(dir, 'lib', 'libpq.so.5.18'), 'x'.repeat(100), { mode: 0o600 });
    writeFileSync(path.join(dir, 'lib', `run-${randomUUID()}`), '');
    symlinkSync('libpq.so.5.18', path.join(dir, 'lib', 'libpq.so'));
    return dir;
  }

  const runAsPostgres = (file: string) => {
    if (!account) throw new Error('no postgres account');
    return spawnSync(file, { uid: account.uid, gid: account.gid, encoding: 'utf8' });
  };

  it('are run from a copy of ours in the temp directory, made once and reused', () => {
    if (!account) throw new Error('no postgres account');
    const source = fakeInstallation(0o700);
    expect(runAsPostgres(path.join(source, 'bin', 'postgres')).error).toMatchObject({ code: 'EACCES' });

    const copy = reachableInstallation(source, account);
    temps.push(copy);
    expect(path.dirname(copy)).not.toContain(path.dirname(source));
    expect(path.basename(copy)).toMatch(/^mailplatform-postgres-[0-9a-f]{16}$/);
    expect(runAsPostgres(path.join(copy, 'bin', 'postgres')).stdout).toBe('ran\n');
    const st = statSync(copy);
    expect([st.uid, st.mode & 0o777]).toEqual([0, 0o755]);
    expect(statSync(path.join(copy, 'lib', 'libpq.so')).size).toBe(100); // links kept
    expect(statSync(path.join(copy, 'lib', 'libpq.so.5.18')).mode & 0o777).toBe(0o644);

    const inode = statSync(path.join(copy, 'bin', 'postgres')).ino;
    expect(reachableInstallation(source, account)).toBe(copy);
    expect(statSync(path.join(copy, 'bin', 'postgres')).ino).toBe(inode); // not copied again

    // A copy missing a file (a temp cleaner passed) is made again.
    unlinkSync(path.join(copy, 'lib', 'libpq.so.5.18'));
    expect(reachableInstallation(source, account)).toBe(copy);
    expect(statSync(path.join(copy, 'lib', 'libpq.so.5.18')).size).toBe(100);
  });

  it("never runs what a folder of someone else's holds under the copy's name", () => {
    if (!account) throw new Error('no postgres account');
    const source = fakeInstallation(0o700);
    const first = reachableInstallation(source, account);
    temps.push(first);
    rmSync(first, { recursive: true });
    // Taken by another user, with a program of theirs in it.
    mkdirSync(path.join(first, 'bin'), { recursive: true, mode: 0o755 });
    writeFileSync(path.join(first, 'bin', 'postgres'), '#!/bin/sh\necho theirs\n', { mode: 0o755 });
    for (const file of [first, path.join(first, 'bin'), path.join(first, 'bin', 'postgres')]) chownSync(file, account.uid, account.gid);
    const copy = reachableInstallation(source, account);
    temps.push(copy);
    expect(copy).not.toBe(first);
    expect(runAsPostgres(path.join(copy, 'bin', 'postgres')).stdout).toBe('ran\n');
  });

  it('are used where they are when the postgres user can reach them', () => {
    if (!account) throw new Error('no postgres account');
    const source = fakeInstallation(0o755);
    chmodSync(path.join(source, 'lib'), 0o755);
    chmodSync(path.join(source, 'bin', 'postgres'), 0o755);
    chmodSync(path.join(source, 'lib', 'libpq.so.5.18'), 0o644);
    expect(reachableInstallation(source, account)).toBe(source);
  });
});
