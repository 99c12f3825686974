import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectServer, type Database } from '../../src/db/connect';
import { migrateToLatest } from '../../src/db/migrate';

/** The server Postgres of the development machine and CI (trust auth, user root). Loopback only. */
export const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgres://root@127.0.0.1:5432';
const ADMIN_DATABASE = process.env.BENCH_ADMIN_DATABASE ?? 'test';

export function databaseUrl(name: string): string {
  return `${SERVER}/${name}`;
}

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(ADMIN_DATABASE), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export interface ScratchDatabase {
  name: string;
  url: string;
  /** Kysely on the scratch database, for seeding through the stores. */
  database: Database;
  /** A plain pg pool on it, for the floors (raw multi-row inserts) and for checks. */
  pool: pg.Pool;
  drop(): Promise<void>;
  /** Refreshes the planner's statistics after a seed, as autovacuum would soon do in a live system. */
  analyze(): Promise<void>;
  /** Closes the connections and leaves the database in place. */
  release(): Promise<void>;
}

/** A new, migrated database with a unique name; `drop()` removes it (also called by the watchdog). */
export async function createScratchDatabase(): Promise<ScratchDatabase> {
  const name = `cp_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = databaseUrl(name);
  const database = connectServer(url, { max: 10, connectionTimeoutMs: 10_000 });
  const pool = new pg.Pool({ connectionString: url, max: 16 });
  pool.on('error', () => undefined);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await Promise.allSettled([database.close(), pool.end()]);
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  try {
    await migrateToLatest(database.db);
  } catch (err) {
    await drop().catch(() => undefined);
    throw err;
  }
  const release = async () => {
    dropped = true;
    await Promise.allSettled([database.close(), pool.end()]);
  };
  const analyze = async () => {
    await pool.query('ANALYZE');
  };
  return { name, url, database, pool, drop, release, analyze };
}
