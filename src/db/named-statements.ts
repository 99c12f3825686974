import { sql } from 'kysely';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/*
 * Opt-in server-side prepared statements for hot queries. A query whose SQL starts with the comment
 * `/* prepared:<name> *\/` (see `preparedAs`) is sent as the named statement `<name>`, so each
 * connection parses and plans it once instead of on every call (the session check and GET /v1/org
 * spent more time being planned than executed). On the embedded database the marker is just a
 * comment.
 *
 * The seam is Kysely's own `PostgresPool` interface (what `PostgresDialect` takes): a pool whose
 * clients send marked queries by name. Nothing in `pg` is patched.
 *
 * One name, one SQL text: node-postgres refuses a second text under a name a connection has
 * prepared, but only on that connection and only when it happens to see both. `StatementNames`
 * checks every use in the process instead, so a query whose text varies under one name (an
 * optional filter inside a prepared query) fails on its first use anywhere, tests included.
 */
const PREPARED_MARKER = /\/\* prepared:(\w{1,60}) \*\//;

export function preparedAs(name: string) {
  if (!/^\w{1,60}$/.test(name)) throw new Error(`prepared statement name ${JSON.stringify(name)} must be 1-60 word characters`);
  return sql.raw(`/* prepared:${name} */`);
}

/**
 * A page size written into a prepared statement's text (the statement's name must carry it too:
 * one prepared statement per size in use; the contract caps sizes at 100). As a parameter,
 * Postgres's generic plan guesses a LIMIT of a tenth of the table's matching rows, prefers a
 * custom plan, and plans the statement anew on every call: at 100,000 members GET /v1/members'
 * page was planned on 12 of 12 executions (0.71 ms each; 0.29 ms once generic).
 */
export function sizeInText(size: number) {
  if (!Number.isSafeInteger(size) || size < 1) throw new Error(`page size ${size} is not a positive integer`);
  return sql.lit(size);
}

/** Every pool of the process checks against one record, so two pools cannot disagree either. */
export class StatementNames {
  readonly #texts = new Map<string, string>();
  /**
   * The last named text and its name: a statement compiled once (the session check's) arrives as
   * the same string object every time, answered by one comparison instead of a slice and a RegExp.
   */
  #lastText = '';
  #lastName = '';

  /** The statement name a query is sent under, or null for an unnamed query; throws when a name meets a second text. */
  nameOf(text: string): string | null {
    if (text === this.#lastText) return this.#lastName;
    const name = PREPARED_MARKER.exec(text.slice(0, 120))?.[1];
    if (!name) return null;
    const known = this.#texts.get(name);
    if (known === undefined) this.#texts.set(name, text);
    else if (known !== text) {
      throw new Error(`prepared statement "${name}" was used with two different SQL texts; a prepared query must be one constant text:\n${known}\n---\n${text}`);
    }
    this.#lastText = text;
    this.#lastName = name;
    return name;
  }
}

const PROCESS_NAMES = new StatementNames();

/** Kysely's pool over a pg pool, sending marked queries as named statements (one client wrapper per pg client). */
export function namedStatementPool(pool: pg.Pool, names: StatementNames = PROCESS_NAMES): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (!wrapper) {
      wrapper = {
        query: ((config: unknown, values?: readonly unknown[]) => {
          if (typeof config === 'string') {
            const name = names.nameOf(config);
            return name ? client.query({ name, text: config, values: values as unknown[] }) : client.query(config, values as unknown[]);
          }
          return client.query(config as never); // a cursor (Kysely streaming)
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      };
      wrappers.set(client, wrapper);
    }
    return wrapper;
  };
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}
