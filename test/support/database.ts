import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { connectEmbedded, connectServer, type Database } from '../../src/db/connect';
import { ADMIN_DATABASE, serverUrl, testDbKind } from './env';

export interface TestDatabase extends Database {
  /** The server database's name (pg only): fault tests connect to it directly. */
  name?: string;
}

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** The names of a run's test databases start with this (the run is its template's suffix). */
export function testDatabasePrefix(template: string): string {
  return `cp_t_${template.replace(/^cp_tpl_/, '')}_`;
}

/**
 * A fresh, migrated database for one test file: a copy of the run's template. Never a mock.
 * `max` bounds the server pool (default as the service's).
 */
export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  if (testDbKind() === 'pglite') {
    const dump = process.env.TEST_PGLITE_DUMP;
    if (!dump) throw new Error('TEST_PGLITE_DUMP is not set; run tests through jest (global-setup)');
    return connectEmbedded({ loadDataDir: new Blob([await readFile(dump)]) });
  }
  const template = process.env.TEST_PG_TEMPLATE;
  if (!template) throw new Error('TEST_PG_TEMPLATE is not set; run tests through jest (global-setup)');
  const name = `${testDatabasePrefix(template)}${randomBytes(6).toString('hex')}`;
  // Two workers copying the same template at once can collide; the copy is quick, so retry.
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      // A test database is thrown away: its commits need not wait for the disk (the server's
      // default waits for every commit's WAL flush, which the suite's thousands of writes pay for).
      await adminQuery(`ALTER DATABASE ${name} SET synchronous_commit = off`);
      break;
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  const database = connectServer(serverUrl(name), options.max === undefined ? {} : { max: options.max });
  return {
    ...database,
    name,
    // Dropped with the run's others by the global teardown, not here: every DROP DATABASE forces
    // an immediate checkpoint, which wrote out the other worker's dirty pages in the middle of its
    // tests, once per test file.
    close: () => database.close(),
  };
}
