import { Kysely, PostgresDialect, type LogEvent } from 'kysely';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { DB } from './schema';
import { namedStatementPool } from './named-statements';
import { metrics, statementLabel } from '../observability/metrics';

export type DialectKind = 'pg' | 'pglite';

export interface Database {
  db: Kysely<DB>;
  kind: DialectKind;
  /** The embedded engine, when kind is 'pglite' (tests dump and load its data dir). */
  pglite?: PGlite;
  /** A server database's pool: connections in use, idle, and requests waiting for one (metrics). */
  poolStats?(): { used: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/**
 * Kysely's query log, on only while metrics are: each statement's duration under its prepared
 * name or SQL kind (never its text). Kysely times a query only when a log is configured.
 */
function statementTimer(): ((event: LogEvent) => void) | undefined {
  const m = metrics;
  if (!m) return undefined;
  return (event) => m.dbDuration.observe({ db_operation_name: statementLabel(event.query.sql) }, event.queryDurationMillis / 1000);
}

export interface ServerDatabaseOptions {
  /** Upper bound on waiting for a connection; past it the request gets 503, not a hang. */
  connectionTimeoutMs?: number;
  max?: number;
  /** Settings of every connection of the pool (sent at connect: `-c name=value`). */
  sessionSettings?: Readonly<Record<string, string>>;
}

/** Marks a query to be sent as a named prepared statement (see ./named-statements.ts). */
export { preparedAs, sizeInText } from './named-statements';

/** Kysely on a Postgres server (`DATABASE_URL`). */
export function connectServer(url: string, options: ServerDatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 3000,
    // Bounded queries: a statement that runs this long is a bug or a dead server.
    query_timeout: 15_000,
    idleTimeoutMillis: 30_000,
    ...(options.sessionSettings ? { options: Object.entries(options.sessionSettings).map(([name, value]) => `-c ${name}=${value}`).join(' ') } : {}),
  });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  // Nor a checked-out client between two queries (a server shutdown ends every session): without
  // a listener its 'error' event is an uncaught exception. The pool drops it on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: namedStatementPool(pool) }), log: statementTimer() });
  const poolStats = () => ({ used: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount });
  return { db, kind: 'pg', poolStats, close: () => db.destroy() };
}

/**
 * Kysely on the embedded PGlite. `dataDir` undefined keeps it in memory; `loadDataDir` starts from
 * a dump (tests load a migrated template instead of running initdb per file).
 */
export async function connectEmbedded(options: { dataDir?: string; loadDataDir?: Blob } = {}): Promise<Database> {
  // Loaded only here: a service on a Postgres server (DATABASE_URL) never holds PGlite's code (~14 MB).
  const [{ PGlite, types: pgliteTypes }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')]);
  const pglite = await PGlite.create({
    dataDir: options.dataDir,
    loadDataDir: options.loadDataDir,
    // int8 as a string, as node-postgres returns it, so both dialects give stores the same values.
    parsers: { [pgliteTypes.INT8]: (value: string) => value },
  });
  const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite), log: statementTimer() });
  return { db, kind: 'pglite', pglite, close: () => db.destroy() };
}
