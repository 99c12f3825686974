import { sql, type Kysely } from 'kysely';

/**
 * Reads every text-like column (text, varchar, json, jsonb, arrays) of every table in the public
 * schema and returns `table.column` for each value containing one of `needles` in plain text.
 */
export async function findPlainText(db: Kysely<any>, needles: string[]): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    SELECT c.table_name, c.column_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
      AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY')`.execute(db);
  const hits: string[] = [];
  for (const { table_name, column_name } of columns.rows) {
    const values = await sql<{ v: string | null }>`SELECT ${sql.ref(column_name)}::text AS v FROM ${sql.table(table_name)}`.execute(db);
    for (const { v } of values.rows) {
      if (v && needles.some((needle) => v.includes(needle))) hits.push(`${table_name}.${column_name}`);
    }
  }
  return [...new Set(hits)];
}

/** How many text-like columns the scan reads (so a test can show it looked at something). */
export async function scannedColumnCount(db: Kysely<any>): Promise<number> {
  const r = await sql<{ n: string }>`SELECT count(*)::text AS n FROM information_schema.columns
    WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY')`.execute(db);
  return Number(r.rows[0]!.n);
}
