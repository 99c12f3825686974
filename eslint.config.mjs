// Flat config: the recommended sets only (no type-aware rules, so `npm run lint` stays fast;
// `npm run typecheck` is where types are checked).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// The few Node globals plain JS config files use (the `globals` package is not a direct dependency).
const nodeGlobals = {
  require: 'readonly',
  module: 'writable',
  exports: 'writable',
  __dirname: 'readonly',
  process: 'readonly',
  console: 'readonly',
};

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
