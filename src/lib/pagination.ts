import { sql, type Expression, type SqlBool } from 'kysely';
import { hmacBase64url, safeEqual } from './crypto';
import { Invalid } from './errors';
import { jsonText } from './json-text';
import type { JsonPage } from '../db/json-page';

/**
 * Keyset pagination on (created_at, id), newest first. The cursor is opaque: the last row's
 * position plus the list's name, signed, so a cursor from another list or a forged one is a 400
 * instead of a silently wrong page. A page costs the same at any depth given an index on
 * (scope, created_at DESC, id DESC).
 */
export interface Position {
  createdAt: Date;
  id: string;
}

/** Rows as stores return them (`created_at`), given the position a page is keyed on. */
export function positioned<R extends { id: string; created_at: Date }>(rows: R[]): (R & Position)[] {
  return rows.map((r) => ({ ...r, createdAt: r.created_at }));
}

export interface PageRequest {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const DEFAULT_PAGE_SIZE = 50;
/** The contract's largest page (`Limit` in openapi/components/parameters.yaml). */
export const MAX_PAGE_SIZE = 100;
/** The contract's longest cursor (`Cursor` in openapi/components/parameters.yaml). */
export const MAX_CURSOR_LENGTH = 255;

export class Cursors {
  constructor(private readonly key: Buffer) {}

  encode(list: string, position: Position): string {
    const payload = Buffer.from(JSON.stringify([list, position.createdAt.toISOString(), position.id])).toString('base64url');
    return `${payload}.${hmacBase64url(this.key, payload).slice(0, 22)}`;
  }

  decode(list: string, cursor: string | undefined): Position | null {
    if (cursor === undefined) return null;
    // The error is made only when thrown: an Error captures its stack when constructed, which
    // cost every page with a valid cursor tens of microseconds.
    const bad = () => Invalid.at(['query', 'cursor'], 'cursor is not valid for this list');
    const [payload, mac] = cursor.split('.');
    if (!payload || !mac || !safeEqual(mac, hmacBase64url(this.key, payload).slice(0, 22))) throw bad();
    let position: Position | null = null;
    try {
      const [l, t, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, string, string];
      const createdAt = new Date(t);
      if (l === list && typeof id === 'string' && !Number.isNaN(createdAt.getTime())) position = { createdAt, id };
    } catch {
      // Not JSON of the expected shape: refused below.
    }
    if (!position) throw bad();
    return position;
  }

  /**
   * Runs `fetch` for one page (asking for one row more than the limit to learn whether another
   * page exists) and builds the cursor from the last row returned.
   */
  async page<R extends Position, T>(
    list: string,
    request: PageRequest,
    fetch: (after: Position | null, take: number) => Promise<R[]>,
    toItem: (row: R) => T,
  ): Promise<Page<T>> {
    const limit = request.limit ?? DEFAULT_PAGE_SIZE;
    const rows = await fetch(this.decode(list, request.cursor), limit + 1);
    const more = rows.length > limit;
    const pageRows = more ? rows.slice(0, limit) : rows;
    const last = pageRows[pageRows.length - 1];
    return { items: pageRows.map(toItem), nextCursor: more && last ? this.encode(list, last) : null };
  }

  /** A page whose items Postgres wrote as JSON text (src/db/json-page.ts), fetched for the request's cursor and limit. */
  async jsonPage<T>(list: string, request: PageRequest, fetch: (after: Position | null, limit: number) => Promise<JsonPage>): Promise<Page<T>> {
    return this.ofJsonPage<T>(list, await fetch(this.decode(list, request.cursor), request.limit ?? DEFAULT_PAGE_SIZE));
  }

  /** The answer of a page Postgres wrote: its items as they are, and the cursor of its last one. */
  ofJsonPage<T>(list: string, page: JsonPage): Page<T> {
    return { items: jsonText<T[]>(page.itemsJson), nextCursor: page.next ? this.encode(list, page.next) : null };
  }
}

/** `(created_at, id) < (position)`: the WHERE clause of a newest-first keyset page. */
export function before(createdAtColumn: string, idColumn: string, position: Position): Expression<SqlBool> {
  return sql<SqlBool>`(${sql.ref(createdAtColumn)}, ${sql.ref(idColumn)}) < (${position.createdAt}, ${position.id})`;
}
