import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { namedStatementPool, preparedAs, StatementNames } from '../../src/db/named-statements';
import { serverUrl, ADMIN_DATABASE, testDbKind } from '../support/env';

/**
 * The seam that sends marked queries as named prepared statements (src/db/named-statements.ts):
 * a name never carries two SQL texts, checked at every use (StatementNames) and, for the names
 * written in the source, before any query runs.
 */
describe('StatementNames', () => {
  const q = (name: string, body: string) => `/* prepared:${name} */ ${body}`;

  it('names a marked query and leaves an unmarked one alone', () => {
    const names = new StatementNames();
    expect(names.nameOf(q('one', 'SELECT 1'))).toBe('one');
    expect(names.nameOf('SELECT 1')).toBeNull();
  });

  it("finds the marker where Kysely's modifyFront puts it (after the verb)", () => {
    expect(new StatementNames().nameOf('select /* prepared:front */ "id" from "t"')).toBe('front');
  });

  it('accepts the same name with the same text again', () => {
    const names = new StatementNames();
    names.nameOf(q('again', 'SELECT $1::int'));
    expect(names.nameOf(q('again', 'SELECT $1::int'))).toBe('again');
  });

  it('refuses a second text under a known name, naming both texts', () => {
    const names = new StatementNames();
    names.nameOf(q('twice', 'SELECT 1'));
    expect(() => names.nameOf(q('twice', 'SELECT 2'))).toThrow(/"twice" was used with two different SQL texts[\s\S]*SELECT 1[\s\S]*SELECT 2/);
  });

  it('refuses a name that is not 1-60 word characters', () => {
    expect(() => preparedAs('has space')).toThrow(/must be 1-60 word characters/);
  });
});

/** `preparedAs(...)` call sites in src/: a literal name, a template's static parts, or null for a variable. */
function callSites(): { file: string; pattern: RegExp | null; text: string }[] {
  const root = path.resolve(__dirname, '..', '..', 'src');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const full = path.join(dir, entry);
      if (statSync(full).isDirectory()) walk(full);
      else if (full.endsWith('.ts')) files.push(full);
    }
  };
  walk(root);
  const out: { file: string; pattern: RegExp | null; text: string }[] = [];
  for (const file of files) {
    if (file.endsWith('named-statements.ts')) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(/preparedAs\(\s*([^)]*?)\s*\)/g)) {
      const arg = m[1]!;
      const literal = /^(['`])([^'`$]*)\1$/.exec(arg);
      const template = /^`(.*)`$/.exec(arg);
      const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const pattern = literal
        ? new RegExp(`^${escape(literal[2]!)}$`)
        : template
          ? new RegExp(`^${template[1]!.split(/\$\{[^}]*\}/).map(escape).join('\\w*')}$`)
          : null;
      out.push({ file: path.relative(root, file), pattern, text: arg });
    }
  }
  return out;
}

describe('prepared statement names in the source', () => {
  const sites = callSites();

  it('finds the call sites', () => {
    expect(sites.length).toBeGreaterThan(5);
  });

  it('gives every literal name one call site (a copied name would carry a second text)', () => {
    const clashes: string[] = [];
    for (const [i, a] of sites.entries()) {
      for (const b of sites.slice(i + 1)) {
        const aLiteral = /^'/.test(a.text) ? a.text.slice(1, -1) : null;
        const bLiteral = /^'/.test(b.text) ? b.text.slice(1, -1) : null;
        if ((aLiteral && b.pattern?.test(aLiteral)) || (bLiteral && a.pattern?.test(bLiteral))) {
          clashes.push(`${a.file}: preparedAs(${a.text}) and ${b.file}: preparedAs(${b.text}) can produce the same name`);
        }
      }
    }
    expect(clashes).toEqual([]);
  });
});

(testDbKind() === 'pg' ? describe : describe.skip)('namedStatementPool on the Postgres server', () => {
  let pool: pg.Pool;
  let db: Kysely<Record<string, never>>;
  let names: StatementNames;
  const seen: string[] = [];
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: serverUrl(ADMIN_DATABASE), max: 1 });
    // Record what reaches pg: named configs for marked queries, plain text otherwise.
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
        seen.push(typeof config === 'object' && config && 'name' in config ? `named ${(config as { name: string }).name}` : 'plain');
        return query(config, ...rest);
      };
    });
    names = new StatementNames();
    db = new Kysely({ dialect: new PostgresDialect({ pool: namedStatementPool(pool, names) }) });
  });
  afterAll(() => db.destroy());

  it('sends a marked query as a named statement, every time with its parameters, and others as they are', async () => {
    for (const n of [1, 2, 3]) {
      const { rows } = await sql<{ n: number }>`${preparedAs('seam_check')} SELECT ${n}::int + 1 AS n`.execute(db);
      expect(rows).toEqual([{ n: n + 1 }]);
    }
    await sql`SELECT 1`.execute(db);
    expect(seen.slice(-4)).toEqual(['named seam_check', 'named seam_check', 'named seam_check', 'plain']);
  });

  it('refuses a second text under the same name before it reaches the server, and the connection stays usable', async () => {
    const sent = seen.length;
    await expect(sql`${preparedAs('seam_check')} SELECT ${1}::int + 2 AS n`.execute(db)).rejects.toThrow(/two different SQL texts/);
    expect(seen.length).toBe(sent);
    const { rows } = await sql<{ n: number }>`${preparedAs('seam_check')} SELECT ${5}::int + 1 AS n`.execute(db);
    expect(rows).toEqual([{ n: 6 }]);
  });
});
