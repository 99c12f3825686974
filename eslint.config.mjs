// Flat config: the recommended sets only (no type-aware rules, so `npm run lint` stays fast;
// `npm run typecheck` is where types are checked).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { readdirSync } from 'node:fs';
import { URL } from 'node:url';

// The few Node globals plain JS config files use (the `globals` package is not a direct dependency).
const nodeGlobals = {
  require: 'readonly',
  module: 'writable',
  exports: 'writable',
  __dirname: 'readonly',
  process: 'readonly',
  console: 'readonly',
};

const serverPattern = {
  // Relative imports only: packages such as @simplewebauthn/server are not the server.
  regex: '^\\.{1,2}/(.*/)?server(/|$)',
  message: 'Nothing below the server imports src/server/: handler types come from src/contract/, domain types from src/domain/ (dependencies point down).',
};

const noAsyncLocalStorage =
  'No AsyncLocalStorage in src/: it turns on promise hooks process-wide (~12% of request CPU). Pass what a request needs explicitly (e.g. deps.audit).';

// One owner per table: an area reaches another area's tables through that area's services, never
// its stores (store.ts, *-store.ts). src/grants is the one exception: its generic grant store is
// shared by the four resource kinds that have grants. One zone per folder of src/, made from the
// folders themselves, so a new area is covered without an edit here.
const areas = readdirSync(new URL('./src/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const SHARED_STORES = new Set(['grants']);
const storeZones = areas.map((area) => ({
  target: `./src/${area}/**/*`,
  from: areas
    .filter((other) => other !== area && !SHARED_STORES.has(other))
    .flatMap((other) => [`./src/${other}/**/store.ts`, `./src/${other}/**/*-store.ts`]),
  message: "Call the owning area's service (its store is its own: one owner per table; ARCHITECTURE.md).",
}));

// Accounts sit below organizations: src/users (users, sessions, link tokens) never reaches into
// src/members, so members' session loaders (src/principal → users) close no circle. What spans an
// account and its memberships (the account-level audit entry, taking over an unverified account)
// lives in src/account, above both.
const layerZones = [
  { target: './src/users/**/*', from: './src/members/**/*', message: 'src/users sits below src/members: put what needs both in src/account (ARCHITECTURE.md).' },
];

export default defineConfig(
  { ignores: ['dist/', 'generated/', 'node_modules/', 'data/', 'coverage/', 'bench/results/', 'packages/*/dist/', 'packages/*/src/generated/'] },
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
    // Dependencies point down (server → handler → service → store; domain, access and lib below
    // them): no import cycles anywhere in src.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: [...storeZones, ...layerZones] }],
    },
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
    // The server (src/server/: app, routing, dispatch, validation, error mapping, logging, headers)
    // is the top: it imports the areas' handlers, dialects and fronts from its registry, and nothing
    // below imports it. Areas take handler-facing types from src/contract/ and domain types from
    // src/domain/ (ARCHITECTURE.md). Only main.ts, the process entry, starts it.
    files: ['src/**/*.ts'],
    ignores: ['src/server/**', 'src/main.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [serverPattern] }],
    },
  },
  {
    files: ['src/**/store.ts', 'src/**/*-store.ts', 'src/domain/**/*.ts', 'src/access/**/*.ts', 'src/principal/**/*.ts', 'src/db/**/*.ts', 'src/lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            serverPattern,
            { regex: '^\\.{1,2}/(.*/)?contract(/|$)', message: 'Stores, domain, access, principal, db and lib sit below the handlers: they never import the handler contract (src/contract/).' },
          ],
        },
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
            serverPattern,
            { group: ['**/db/schema'], message: 'Table types import column types from src/db/columns, never the schema that composes them.' },
          ],
        },
      ],
    },
  },
  {
    // The audit module is below every area that records changes: what an audited event queues
    // (webhook deliveries) reaches it through its event hook (src/audit/event-hook.ts), installed
    // by createDeps. The typescript-eslint rule, so the store blocks' options above stay as they are.
    files: ['src/audit/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/webhooks', '**/webhooks/*'], message: 'The audit module never imports webhooks: use the event hook (src/audit/event-hook.ts).' }] },
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
