/**
 * One config for both databases: TEST_DB=pg (server Postgres, a database per test file cloned from
 * a migrated template) or TEST_DB=pglite (embedded, a migrated data dir loaded per test file).
 * `npm test` runs both; see scripts/test-all.ts (and PGLITE below for what runs on both).
 */
/**
 * The files that also run on embedded PGlite (`TEST_DB=pglite`); everything runs on server
 * Postgres. PGlite is the same Postgres engine (compiled to WebAssembly), so the service's SQL means
 * the same on both; what differs is the layer between them and the service, which these files
 * exercise: the embedded start and every migration, prepared-statement names, the type parsing of
 * int8 counts and sequences, dates and JSON (telemetry, the audit chain and its checkpoints), one
 * connection shared by requests and the job runner (webhook deliveries, mail, audit streams,
 * concurrency), the request preloads and round trips, and one flow of each kind of principal and
 * owner of data (organizations and members, sign-in, service accounts, client-credentials tokens,
 * the authorization-code and device flows through the hosted pages, the MCP server, deletion and purge with
 * the table registry). Each file here costs a data-dir load on top of its tests, so the set stays
 * small: `TEST_ALL_FILES=1` runs every file on PGlite.
 */
const PGLITE = [
  'src/lib/json-text.test.ts',
  'test/api/migrations.test.ts',
  'test/seams/named-statements.test.ts',
  'test/seams/request-preload.test.ts',
  'test/api/principal-round-trips.test.ts',
  'test/api/oauth-client-credentials.test.ts',
  'test/hardening/concurrency.test.ts',
  'test/audit/record.test.ts',
  'test/audit/checkpoints.test.ts',
  'test/audit/streams.test.ts',
  'test/api/telemetry.test.ts',
  'test/api/webhook-delivery.test.ts',
  'test/api/mail.test.ts',
  'test/api/org.test.ts',
  'test/api/org-deletion.test.ts',
  'test/api/org-exports.test.ts',
  'test/api/org-tables-registry.test.ts',
  'test/api/members.test.ts',
  'test/api/auth.test.ts',
  'test/api/service-accounts.test.ts',
  'test/browser/oauth-chromium.test.ts',
  'test/browser/oauth-device-chromium.test.ts',
  'test/api/mcp-server.test.ts',
];
const pgliteSet = process.env.TEST_DB === 'pglite' && process.env.TEST_ALL_FILES !== '1';

/**
 * The library-parity seams: the service's own replacement of a library step against the library's
 * step, over every operation of the spec (seconds per operation, the slowest files of the suite).
 * They use no database and change only when the replaced code, the library or the spec does, so
 * `npm test` leaves them out and `npm run test:seams` (TEST_SEAMS=1, server Postgres only) runs
 * them alone; CI runs both (.ci/run).
 */
const SEAMS = ['test/seams/dispatch-parity.test.ts', 'test/seams/router-parity.test.ts', 'test/seams/validator-parity.test.ts'];
const seamsOnly = process.env.TEST_SEAMS === '1';
// CI runs the seams inside the server-Postgres run (TEST_WITH_SEAMS=1, .ci/run): two workers pack them
// among the other files instead of running three files on two workers after it.
const withSeams = process.env.TEST_WITH_SEAMS === '1' && process.env.TEST_DB === 'pg';
/**
 * The unit tier (`npm run test:unit`, TEST_UNIT=1): parsers, canonical forms and other pure code,
 * in milliseconds with no database (no global setup). `npm test` runs these files too.
 */
const UNIT = ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/src/**/*.test.ts'];
const unitOnly = process.env.TEST_UNIT === '1';
const pattern = (file) => `<rootDir>/${file.replace(/\./g, '\\.')}$`;

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.(ts|js|mjs)$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // openid-client, oidc-provider and their jose/oauth4webapi are ESM-only (and otplib's @scure/base, @noble/hashes): jest (CommonJS) must
  // transform them with the same swc transform (checked with a full login flow under jest 30).
  transformIgnorePatterns: ['/node_modules/(?!(openid-client|oauth4webapi|jose|oidc-provider|otplib|@otplib|@scure/base|@noble/hashes)/)'],
  // The client package is tested from its source (what `npm run build` compiles to dist/).
  moduleNameMapper: { '^@org-control-plane/client$': '<rootDir>/packages/client/src/index.ts' },
  testMatch: unitOnly ? UNIT : seamsOnly ? SEAMS.map((file) => `<rootDir>/${file}`) : pgliteSet ? PGLITE.map((file) => `<rootDir>/${file}`) : ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(seamsOnly || withSeams ? [] : SEAMS.map(pattern))],
  // The seams use no database: no template to migrate for them.
  ...(seamsOnly || unitOnly ? {} : { globalSetup: '<rootDir>/test/support/global-setup.ts', globalTeardown: '<rootDir>/test/support/global-teardown.ts' }),
  maxWorkers: 2,
  // Longest files first, also without cached timings (test/support/sequencer.cjs).
  testSequencer: '<rootDir>/test/support/sequencer.cjs',
  // Hooks share this bound: building a test app (a migrated database, the contract, the first
  // validators) can take seconds on a loaded 2-core machine; a test that hangs still fails, later.
  testTimeout: 120_000,
};
