/** Where the test run's databases are; set by global-setup, read by each test file. */
export const SERVER_URL = process.env.TEST_DATABASE_SERVER ?? 'postgres://root@127.0.0.1:5432';
export const ADMIN_DATABASE = 'test';

export function testDbKind(): 'pg' | 'pglite' {
  const kind = process.env.TEST_DB ?? 'pg';
  if (kind !== 'pg' && kind !== 'pglite') throw new Error(`TEST_DB must be pg or pglite, got ${kind}`);
  return kind;
}

export function serverUrl(database: string): string {
  return `${SERVER_URL}/${database}`;
}
