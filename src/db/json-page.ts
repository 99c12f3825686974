import { sql, type RawBuilder } from 'kysely';
import type { Position } from '../lib/pagination';
import { sizeInText } from './named-statements';

/**
 * A keyset page whose items Postgres writes as the contract's JSON (src/lib/json-text.ts), in the
 * statement that reads them: GET /v1/members' pages (read by the session query) and grant pages.
 */
export interface JsonPage {
  /** The page's items, a JSON array as text. */
  itemsJson: string;
  /** The last item's position when another page follows, else null. */
  next: Position | null;
}

/**
 * The SELECT that makes a JsonPage of `size` items from `rows`: a query of at most size + 1 rows
 * in page order, each with `created_at`, `id` and `n` (its row_number in that order); `item` is
 * one row's JSON, written over the alias `p` (src/db/json-sql.ts). The extra row only tells that
 * another page follows. Columns: items_json, last_created_at, last_id (read them with
 * jsonPageOf). The size is written into the text (sizeInText): name the prepared statement per size.
 */
export function jsonPageSelect(item: RawBuilder<unknown>, rows: RawBuilder<unknown>, size: number): RawBuilder<unknown> {
  const n = sizeInText(size);
  return sql`SELECT coalesce(json_agg(${item} ORDER BY p.n) FILTER (WHERE p.n <= ${n}), '[]'::json)::text AS items_json,
      max(p.created_at) FILTER (WHERE p.n = ${n} AND p.more) AS last_created_at,
      max(p.id) FILTER (WHERE p.n = ${n} AND p.more) AS last_id
    FROM (SELECT q.*, count(*) OVER () > ${n} AS more FROM (${rows}) q) p`;
}

/** A JsonPage from the columns jsonPageSelect makes. */
export function jsonPageOf(itemsJson: string, lastCreatedAt: Date | null, lastId: string | null): JsonPage {
  return { itemsJson, next: lastId !== null && lastCreatedAt !== null ? { id: lastId, createdAt: lastCreatedAt } : null };
}
