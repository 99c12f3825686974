import { rm } from 'node:fs/promises';
import pg from 'pg';
import { ADMIN_DATABASE, serverUrl } from './env';

export default async function globalTeardown(): Promise<void> {
  if (process.env.TEST_PG_TEMPLATE) {
    const admin = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${process.env.TEST_PG_TEMPLATE}`);
    await admin.end();
  }
  if (process.env.TEST_PGLITE_DUMP) await rm(process.env.TEST_PGLITE_DUMP, { force: true });
}
