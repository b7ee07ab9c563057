import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/envelope.js';

/** A build of the dashboard as web/vite.config.ts writes it: index.html, a root file, a hashed asset and its Brotli copy. */
function fakeBuild(): string {
  const dist = mkdtempSync(path.join(tmpdir(), 'dashboard-dist-'));
  mkdirSync(path.join(dist, 'assets'));
  writeFileSync(path.join(dist, 'index.html'), '<!doctype html><div id="root"></div>');
  writeFileSync(path.join(dist, 'theme.js'), '// theme');
  const script = 'console.log("app");'.repeat(200);
  writeFileSync(path.join(dist, 'assets', 'index-abc123.js'), script);
  writeFileSync(path.join(dist, 'assets', 'index-abc123.js.br'), brotliCompressSync(Buffer.from(script)));
  return dist;
}

describe('the dashboard at /app', () => {
  let dist: string;
  let t: TestApp;
  beforeAll(async () => {
    dist = fakeBuild();
    t = await createTestApp({ env: { DASHBOARD_DIST: dist } });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('redirects / to /app/ and answers every app path with index.html, not cached, under the CSP, without credentials', async () => {
    const root = await t.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/app/');
    for (const url of ['/app', '/app/', '/app/login', '/app/projects/0192/contacts?search=x']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toContain('<div id="root">');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toMatch(/script-src 'self';.*frame-ancestors 'none'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('serves hashed assets for a year, in the encoding asked for, and nothing outside the build', async () => {
    const plain = await t.app.inject({ method: 'GET', url: '/app/assets/index-abc123.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const br = await t.app.inject({ method: 'GET', url: '/app/assets/index-abc123.js', headers: { 'accept-encoding': 'br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length);
    expect((await t.app.inject({ method: 'GET', url: '/app/theme.js' })).headers['cache-control']).toBe('no-cache');
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/app/assets/missing.js' }), 404, 'NOT_FOUND');
    for (const url of ['/app/assets/../../package.json', '/app/assets/%2e%2e/%2e%2e/package.json', '/app/..%2f..%2fpackage.json']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.body, url).not.toContain('"name": "mailplatform"');
    }
  });

  it('without a build, /app says how to build it (503 in the envelope)', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'dashboard-none-'));
    const bare = await createTestApp({ env: { DASHBOARD_DIST: empty } });
    try {
      const res = await bare.app.inject({ method: 'GET', url: '/app/contacts' });
      expectEnvelope(res, 503, 'SERVICE_UNAVAILABLE');
      expect(res.json().error.message).toContain('npm run build:web');
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
