import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// docs/operations.md "Upgrades": a migration only expands the schema (the previous release keeps
// serving on it during a rolling upgrade); what it removes or changes in place comes in a later
// release, once no running version reads it, in a migration that says so with a `contract:`
// comment naming that release. This reads each migration's up(): 0038 and earlier predate the rule.
const DIR = new URL('../../src/db/migrations/', import.meta.url);
const FIRST_UNDER_RULE = 39;
const CONTRACTING = [
  /\bDROP\s+(TABLE|COLUMN|VIEW|FUNCTION|TYPE|CONSTRAINT)\b/i,
  /\bRENAME\b/i,
  /\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i,
  /\bALTER\s+COLUMN\s+\S+\s+SET\s+NOT\s+NULL\b/i,
  /\bADD\s+COLUMN\b[^;`]*\bNOT\s+NULL\b(?![^;`]*\bDEFAULT\b)/i,
];

/** The text of up(): from its declaration to the next exported function (down, if any). */
function upText(source: string): string {
  const start = source.search(/export\s+async\s+function\s+up\b/);
  if (start < 0) return '';
  const rest = source.slice(start + 1);
  const end = rest.search(/export\s+async\s+function\s+down\b/);
  return end < 0 ? rest : rest.slice(0, end);
}

function contractingStatements(source: string): string[] {
  const up = upText(source);
  if (/\/\/\s*contract:\s*\S/.test(up)) return [];
  return CONTRACTING.flatMap((re) => re.exec(up)?.[0] ?? []);
}

describe('migrations expand only', () => {
  it('finds contracting DDL in up() and accepts it with a contract: note', () => {
    const up = (body: string) => `export async function up(db) {\n${body}\n}\nexport async function down(db) { await sql\`DROP TABLE t\`.execute(db); }`;
    expect(contractingStatements(up('await sql`ALTER TABLE t ADD COLUMN c text`.execute(db);'))).toEqual([]);
    expect(contractingStatements(up('await sql`ALTER TABLE t ADD COLUMN c int NOT NULL DEFAULT 0`.execute(db);'))).toEqual([]);
    expect(contractingStatements(up('await sql`ALTER TABLE t DROP COLUMN c`.execute(db);'))).toEqual(['DROP COLUMN']);
    expect(contractingStatements(up('await sql`ALTER TABLE t RENAME COLUMN a TO b`.execute(db);'))).toEqual(['RENAME']);
    // A unique key dropped: the previous release's ON CONFLICT naming it fails.
    expect(contractingStatements(up('await sql`ALTER TABLE t DROP CONSTRAINT t_key`.execute(db);'))).toEqual(['DROP CONSTRAINT']);
    expect(contractingStatements(up('await sql`ALTER TABLE t ALTER COLUMN a TYPE bigint`.execute(db);'))).toHaveLength(1);
    expect(contractingStatements(up('await sql`ALTER TABLE t ADD COLUMN c int NOT NULL`.execute(db);'))).toHaveLength(1);
    expect(contractingStatements(up('// contract: 0.3 stopped reading c\nawait sql`ALTER TABLE t DROP COLUMN c`.execute(db);'))).toEqual([]);
  });

  it(`holds for every migration from ${FIRST_UNDER_RULE} on`, () => {
    const offending = readdirSync(DIR)
      .filter((f) => /^\d{4}_.*\.ts$/.test(f) && Number(f.slice(0, 4)) >= FIRST_UNDER_RULE)
      .flatMap((f) => contractingStatements(readFileSync(new URL(f, DIR), 'utf8')).map((s) => `${f}: ${s}`));
    expect(offending).toEqual([]);
  });
});
