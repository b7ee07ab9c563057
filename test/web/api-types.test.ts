import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiTypes } from '../../scripts/openapi.js';
import { PROJECT_ROOT } from '../helpers/process.js';

describe('dashboard API types', () => {
  it('web/src/api/schema.d.ts is what `npm run gen:api` writes for the current routes (never edited by hand)', async () => {
    const committed = readFileSync(path.join(PROJECT_ROOT, 'web/src/api/schema.d.ts'), 'utf8');
    // On failure: run `npm run gen:api` and commit the file.
    expect(committed === (await apiTypes())).toBe(true);
  }, 60_000);
});
