import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { sharedBuffersMb } from '../../src/db/embedded.js';

const GB = 2 ** 30;

describe('embedded PostgreSQL settings', () => {
  it('sizes shared_buffers at an eighth of memory, between 128 MB and 2 GB', () => {
    expect(sharedBuffersMb(0.5 * GB)).toBe(128);
    expect(sharedBuffersMb(4 * GB)).toBe(512);
    expect(sharedBuffersMb(8 * GB)).toBe(1024);
    expect(sharedBuffersMb(64 * GB)).toBe(2048);
  });

  it('the running embedded server has that setting', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      const { rows } = await client.query<{ mb: string }>(`SELECT setting::bigint * 8 / 1024 AS mb FROM pg_settings WHERE name = 'shared_buffers'`);
      expect(Number(rows[0]?.mb)).toBe(sharedBuffersMb());
    } finally {
      await client.end();
    }
  });
});
