import { rm } from 'node:fs/promises';
import pg from 'pg';
import { testDatabasePrefix } from './database';
import { ADMIN_DATABASE, serverUrl } from './env';

/**
 * Every DROP DATABASE waits for a checkpoint, and the server serves the drops that wait at the same
 * time with one checkpoint: the run's test databases (one per file) are dropped side by side, over
 * up to this many connections (24 drops on a loaded machine: 58-66 s one after the other, 27-36 s
 * over eight). A server that has no connection to spare gets fewer; the first one is required.
 */
const CONNECTIONS = 8;

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
  await client.connect();
  return client;
}

/** The one connection the drops need: a server short of connections (53300) is asked again for a while. */
async function connectRequired(): Promise<pg.Client> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await connect();
    } catch (err) {
      if ((err as { code?: string }).code !== '53300' || attempt >= 30) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

export default async function globalTeardown(): Promise<void> {
  if (process.env.TEST_PG_TEMPLATE) {
    const admin = await connectRequired();
    const extra = (await Promise.allSettled(Array.from({ length: CONNECTIONS - 1 }, connect))).flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    try {
      // The run's test databases (left by their files: see createTestDatabase), then its template.
      const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [testDatabasePrefix(process.env.TEST_PG_TEMPLATE)]);
      const names = rows.map((r) => r.datname);
      const drop = async (client: pg.Client): Promise<void> => {
        for (let name = names.pop(); name; name = names.pop()) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      };
      await Promise.all([admin, ...extra].map(drop));
      await admin.query(`DROP DATABASE IF EXISTS ${process.env.TEST_PG_TEMPLATE}`);
    } finally {
      await Promise.all([admin, ...extra].map((client) => client.end()));
    }
  }
  if (process.env.TEST_PGLITE_DUMP) await rm(process.env.TEST_PGLITE_DUMP, { force: true });
}
