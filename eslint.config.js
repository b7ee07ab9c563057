import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

/**
 * Module boundaries (STYLE.md "Module boundaries"): from outside a module, only its facade
 * `modules/<m>/index.js`; `jobs/` and `conditions/` never import `http/`; `mail/` is a library
 * (nothing from `modules/`, `db/` or `http/`). Matched on the import text, so one pattern per
 * folder depth (a relative path says how far up it climbs). test/ and bench/ may import internals.
 */
const facadeOnly = 'Import another module only through its facade, modules/<m>/index.js (STYLE.md "Module boundaries").';
/** A deep import into another module from a file `depth` folders below src/modules/. */
const crossModule = (depth) => ({
  regex: `^${'\\.\\./'.repeat(depth)}[^./][^/]*/(?!index\\.js$)`,
  message: facadeOnly,
});
/** A deep import into a module from a file outside src/modules/. */
const intoModule = { regex: '^(\\./|(\\.\\./)+)modules/[^/]+/(?!index\\.js$)', message: facadeOnly };
const noHttp = (who) => ({ regex: '^(\\.\\./)+http/', message: `${who} never imports http/: move what it needs to lib/ (e.g. lib/errors.ts).` });
const mailLibrary = {
  regex: '^(\\.\\./)+(modules|db|http)/',
  message: 'src/mail/ is a library (MIME, DKIM, rendering, transports): no SQL, nothing from modules/, db/ or http/.',
};
const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

const boundaries = [
  ...[1, 2, 3, 4].map((depth) => ({
    files: [`src/modules/*/${'*/'.repeat(depth - 1)}*.ts`],
    rules: restrict(crossModule(depth)),
  })),
  { files: ['src/*.ts', 'src/cli/**/*.ts', 'src/http/**/*.ts', 'src/lib/**/*.ts', 'src/db/**/*.ts'], rules: restrict(intoModule) },
  { files: ['src/jobs/**/*.ts'], rules: restrict(intoModule, noHttp('src/jobs/')) },
  { files: ['src/conditions/**/*.ts'], rules: restrict(intoModule, noHttp('src/conditions/')) },
  { files: ['src/mail/**/*.ts'], rules: restrict(mailLibrary) },
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'dist/**', 'coverage/**', 'web/dist/**', 'web/src/api/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/consistent-type-assertions': ['error', { assertionStyle: 'as', objectLiteralTypeAssertions: 'never' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  ...boundaries,
  // The dashboard (web/): the rules of hooks, and no reaching into the server's code at run time
  // (its API types come from the generated web/src/api/schema.d.ts).
  { files: ['web/src/**/*.{ts,tsx}'], ...reactHooks.configs.flat['recommended-latest'] },
  {
    files: ['web/src/**/*.{ts,tsx}'],
    rules: restrict({ regex: '^(\\.\\./)+(src|test)/', message: 'The dashboard talks to the server over HTTP only (web/src/api/client.ts).' }),
  },
  {
    files: ['bench/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
);
