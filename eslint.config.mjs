// Flat config: the recommended sets only (no type-aware rules, so `npm run lint` stays fast;
// `npm run typecheck` is where types are checked).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

// The few Node globals plain JS config files use (the `globals` package is not a direct dependency).
const nodeGlobals = {
  require: 'readonly',
  module: 'writable',
  exports: 'writable',
  __dirname: 'readonly',
  process: 'readonly',
  console: 'readonly',
};

const noAsyncLocalStorage =
  'No AsyncLocalStorage in src/: it turns on promise hooks process-wide (~12% of request CPU). Pass what a request needs explicitly (e.g. deps.audit).';

export default defineConfig(
  { ignores: ['dist/', 'generated/', 'node_modules/', 'data/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // `_`-prefixed names mark a parameter a signature requires but the body does not use
      // (Express error middleware, handler registries).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      // Boundaries with untyped libraries and test doubles need `any` now and then; review
      // catches abuse better than a rule that invites eslint-disable comments.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Dependencies point down (request → handler → service → store; domain, access and lib below
    // them): no import cycles anywhere in src, and nothing below HTTP imports src/http/.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // The audit context travels explicitly (deps.audit, src/audit/context.ts): one
    // AsyncLocalStorage.run enables promise hooks for the whole process, and every promise of every
    // request then pays for them (about 12% of a request's CPU). no-restricted-syntax, not
    // no-restricted-imports: the blocks below set that rule for some of src/, and a later block's
    // options replace an earlier one's rather than adding to them. The member form catches a
    // namespace import or require() of the module.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value=/^(node:)?async_hooks$/] > ImportSpecifier[imported.name='AsyncLocalStorage']",
          message: noAsyncLocalStorage,
        },
        {
          selector: "MemberExpression[property.name='AsyncLocalStorage']",
          message: noAsyncLocalStorage,
        },
      ],
    },
  },
  {
    files: ['src/**/store.ts', 'src/**/*-store.ts', 'src/**/tables.ts', 'src/domain/**/*.ts', 'src/access/**/*.ts', 'src/principal/**/*.ts', 'src/db/**/*.ts', 'src/lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/http/*', '**/http'], message: 'Stores, tables, domain, access, principal, db and lib never import from src/http/ (dependencies point down).' }] },
      ],
    },
  },
  {
    // Table types are composed into src/db/schema.ts; importing it back would make a cycle.
    files: ['src/**/tables.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/http/*', '**/http'], message: 'Tables never import from src/http/.' },
            { group: ['**/db/schema'], message: 'Table types import column types from src/db/columns, never the schema that composes them.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.{js,cjs,mjs}'],
    languageOptions: { globals: nodeGlobals },
  },
  {
    // jest.config.js and similar CommonJS config files.
    files: ['**/*.{js,cjs}'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
