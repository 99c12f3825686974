/**
 * One config for both databases: TEST_DB=pg (server Postgres, a database per test file cloned from
 * a migrated template) or TEST_DB=pglite (embedded, a migrated data dir loaded per test file).
 * `npm test` runs both; see scripts/test-all.ts.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.(ts|js|mjs)$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // openid-client, oidc-provider and their jose/oauth4webapi are ESM-only: jest (CommonJS) must
  // transform them with the same swc transform (checked with a full login flow under jest 30).
  transformIgnorePatterns: ['/node_modules/(?!(openid-client|oauth4webapi|jose|oidc-provider)/)'],
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  maxWorkers: 2,
  // Hooks share this bound: building a test app compiles every request validator, which takes
  // seconds on a loaded 2-core machine; a test that hangs still fails, later.
  testTimeout: 120_000,
};
