import { rm } from 'node:fs/promises';
import pg from 'pg';
import { testDatabasePrefix } from './database';
import { ADMIN_DATABASE, serverUrl } from './env';

export default async function globalTeardown(): Promise<void> {
  if (process.env.TEST_PG_TEMPLATE) {
    const admin = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
    await admin.connect();
    // The run's test databases (left by their files: see createTestDatabase), then its template.
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [testDatabasePrefix(process.env.TEST_PG_TEMPLATE)]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${process.env.TEST_PG_TEMPLATE}`);
    await admin.end();
  }
  if (process.env.TEST_PGLITE_DUMP) await rm(process.env.TEST_PGLITE_DUMP, { force: true });
}
