import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { connectEmbedded, connectServer } from '../../src/db/connect';
import { migrateToLatest } from '../../src/db/migrate';
import { ADMIN_DATABASE, serverUrl, testDbKind } from './env';

/**
 * Migrates one template per run (so migrations are exercised on an empty database on both
 * dialects), then every test file starts from a copy of it.
 */
export default async function globalSetup(): Promise<void> {
  const run = `${process.pid}_${randomBytes(3).toString('hex')}`;
  if (testDbKind() === 'pg') {
    const template = `cp_tpl_${run}`;
    const admin = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${template}`);
    // The migrations' commits need not wait for the disk either (as the test databases', see
    // createTestDatabase): the template is thrown away with the run. A clone does not inherit it.
    await admin.query(`ALTER DATABASE ${template} SET synchronous_commit = off`);
    await admin.end();
    const database = connectServer(serverUrl(template));
    await migrateToLatest(database.db);
    await database.close();
    process.env.TEST_PG_TEMPLATE = template;
  } else {
    const database = await connectEmbedded();
    await migrateToLatest(database.db);
    const dumpFile = join(tmpdir(), `cp_pglite_${run}.tar`);
    const dump = await dumpEmbedded(database);
    await writeFile(dumpFile, Buffer.from(await dump.arrayBuffer()));
    await database.close();
    process.env.TEST_PGLITE_DUMP = dumpFile;
  }
}

async function dumpEmbedded(database: Awaited<ReturnType<typeof connectEmbedded>>): Promise<Blob> {
  if (!database.pglite) throw new Error('embedded database without its PGlite handle');
  return database.pglite.dumpDataDir('none');
}
