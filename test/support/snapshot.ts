import { createHash } from 'node:crypto';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { preparedAs } from '../../src/db/named-statements';

/**
 * Whole-database views for the hardening suite: a snapshot of every table (row count and a
 * checksum of its rows) to prove a request changed nothing, and a scan of every text and JSON
 * column for secrets that must never be stored in plain text.
 */
type AnyDb = Kysely<any>;

const IGNORED_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

/**
 * Columns a read legitimately writes, left out of the checksum: a session's last use is recorded
 * by the session check itself (at most once a minute), refused request or not.
 */
const USE_TRACKING_COLUMNS: Record<string, string[]> = { sessions: ['last_used_at'] };

export async function tableNames(db: AnyDb): Promise<string[]> {
  // The catalogue rather than information_schema.tables (whose privilege checks cost more than
  // the rest of a snapshot): the same list, the public schema's plain and partitioned tables.
  const { rows } = await sql<{ table_name: string }>`${preparedAs('snapshot_table_names')}
    SELECT c.relname AS table_name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname`.execute(db);
  return rows.map((r) => r.table_name).filter((t) => !IGNORED_TABLES.has(t));
}

export type Snapshot = Record<string, { rows: number; checksum: string }>;

/**
 * Row count and an md5 of the sorted rows of every table. `exclude` leaves out tables whose
 * content legitimately changes on a refused request (rate-limit counters). One statement for all
 * tables (the generated suites take two snapshots per request they check: one round trip per
 * table made them the slowest files of the suite).
 */
export async function snapshot(db: AnyDb, options: { exclude?: string[] } = {}): Promise<Snapshot> {
  const tables = (await tableNames(db)).filter((table) => !options.exclude?.includes(table));
  const out: Snapshot = {};
  if (tables.length === 0) return out;
  const rowText = (table: string) => {
    const dropped = USE_TRACKING_COLUMNS[table];
    // Column names are this file's constants, not input.
    return dropped ? sql`(to_jsonb(t) ${sql.raw(dropped.map((c) => `- '${c}'`).join(' '))})::text` : sql`t::text`;
  };
  const parts = tables.map(
    (table) => sql`SELECT ${sql.lit(table)}::text AS name, count(*)::int AS n, md5(coalesce(string_agg(${rowText(table)}, E'\\n' ORDER BY ${rowText(table)}), '')) AS h FROM ${sql.table(table)} t`,
  );
  const { rows } = await prepared<{ name: string; n: number; h: string }>(sql.join(parts, sql` UNION ALL `), db);
  for (const row of rows) out[row.name] = { rows: row.n, checksum: row.h };
  return out;
}

/**
 * A whole-database query sent as a prepared statement (src/db/named-statements.ts): planning one
 * subquery per table took ~17 of its ~20 ms and the suites run it hundreds of times per file;
 * prepared, each connection plans it once. Its name is a hash of its text (one name, one text).
 */
async function prepared<Row>(query: RawBuilder<unknown>, db: AnyDb): Promise<{ rows: Row[] }> {
  const text = query.compile(db).sql;
  const name = `snapshot_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
  return sql<Row>`${preparedAs(name)} ${query}`.execute(db);
}

/** Row counts only (cheap; enough where a content change is checked another way). */
export async function rowCounts(db: AnyDb): Promise<Record<string, number>> {
  const tables = await tableNames(db);
  const out: Record<string, number> = {};
  if (tables.length === 0) return out;
  const parts = tables.map((table) => sql`SELECT ${sql.lit(table)}::text AS name, count(*)::int AS n FROM ${sql.table(table)}`);
  const { rows } = await prepared<{ name: string; n: number }>(sql.join(parts, sql` UNION ALL `), db);
  for (const row of rows) out[row.name] = row.n;
  return out;
}

/** The tables whose snapshot differs, e.g. ['marketplaces: rows 3 → 2']. */
export function snapshotDiff(before: Snapshot, after: Snapshot): string[] {
  const changes: string[] = [];
  for (const table of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[table];
    const b = after[table];
    if (!a || !b) changes.push(`${table}: ${a ? 'dropped' : 'appeared'}`);
    else if (a.rows !== b.rows) changes.push(`${table}: rows ${a.rows} → ${b.rows}`);
    else if (a.checksum !== b.checksum) changes.push(`${table}: content changed`);
  }
  return changes;
}

export interface SecretHit {
  table: string;
  column: string;
  secretLabel: string;
}

/**
 * Looks for each secret, verbatim, in every text, varchar, json and jsonb column of every table
 * (found through information_schema, so a new table is scanned without being listed).
 */
export async function findSecretsInDatabase(db: AnyDb, secrets: Record<string, string>): Promise<SecretHit[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
    SELECT c.table_name, c.column_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
      AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb') OR c.data_type = 'ARRAY')
    ORDER BY c.table_name, c.column_name`.execute(db);
  const hits: SecretHit[] = [];
  const wanted = Object.entries(secrets).filter(([, v]) => typeof v === 'string' && v.length >= 8);
  for (const { table_name: table, column_name: column } of columns) {
    if (IGNORED_TABLES.has(table)) continue;
    const { rows } = await sql<{ v: string | null }>`SELECT ${sql.ref(column)}::text AS v FROM ${sql.table(table)}`.execute(db);
    for (const { v } of rows) {
      if (!v) continue;
      for (const [label, secret] of wanted) {
        if (v.includes(secret)) hits.push({ table, column, secretLabel: label });
      }
    }
  }
  return hits;
}
