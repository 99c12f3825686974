/*
 * SQL that writes the contract's JSON itself, for answers Postgres aggregates or sends as text
 * (src/lib/json-text.ts): the SQL is the mapper then, so it must write what the TypeScript
 * mappers write. These build constant SQL text (column names, never values) that callers embed
 * with sql.raw once, at module load: a fragment built of Kysely nodes would be compiled again on
 * every request.
 */

/**
 * A timestamp as Date#toISOString writes it (UTC, milliseconds: what a JS Date read from the
 * same column holds).
 */
export function isoTimestamp(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
