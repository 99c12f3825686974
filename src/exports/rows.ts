import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { camel, type TableFile } from './files';

/** Rows per round trip: memory holds one batch of one table. */
export const ROW_BATCH = 1000;

/** A value as it leaves in NDJSON: timestamps in ISO 8601 (UTC), bytes in base64, the rest as JSON has it. */
function jsonValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}

/**
 * One table's rows of the organization as NDJSON text, batch by batch in primary-key order
 * (keyset: each batch starts after the last key of the one before). Only the listed columns and
 * lookups are selected, never `*`: a column added later leaves in no export until files.ts names
 * it. Table and column names come from files.ts, never from input.
 */
export async function* tableLines(db: Db, file: TableFile, organizationId: string): AsyncGenerator<string> {
  const t = sql.table(file.table);
  const selected: RawBuilder<unknown>[] = file.columns.map((c) => sql`t.${sql.ref(c)} AS ${sql.ref(c)}`);
  for (const lookup of file.lookups ?? []) {
    selected.push(sql`(SELECT l.${sql.ref(lookup.column)} FROM ${sql.table(lookup.table)} l WHERE l.id = t.${sql.ref(lookup.via)}) AS ${sql.ref(`lookup_${lookup.as}`)}`);
  }
  const keys = sql.join(file.key.map((k) => sql`t.${sql.ref(k)}`));
  const scope = sql`t.${sql.ref(file.scope ?? 'organization_id')} = ${organizationId}`;
  let last: unknown[] | null = null;
  for (;;) {
    const after: RawBuilder<unknown> = last ? sql` AND (${keys}) > (${sql.join(last.map((v) => sql`${v}`))})` : sql``;
    const { rows } = await sql<Record<string, unknown>>`SELECT ${sql.join(selected)} FROM ${t} t WHERE ${scope}${after} ORDER BY ${keys} LIMIT ${ROW_BATCH}`.execute(db);
    let chunk = '';
    for (const row of rows) {
      const out: Record<string, unknown> = {};
      for (const c of file.columns) out[camel(c)] = jsonValue(row[c]);
      for (const lookup of file.lookups ?? []) out[lookup.as] = jsonValue(row[`lookup_${lookup.as}`]);
      chunk += `${JSON.stringify(out)}\n`;
    }
    if (chunk) yield chunk;
    if (rows.length < ROW_BATCH) return;
    const tail = rows[rows.length - 1]!;
    last = file.key.map((k) => tail[k]);
  }
}
