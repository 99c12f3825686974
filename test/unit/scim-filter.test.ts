import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { FilterCompiler, parseFilter, quoteBareValues, type Resolver } from '../../src/scim/filter';
import { ScimError } from '../../src/scim/errors';

/**
 * SCIM filters (src/scim/filter.ts) with no database: the grammar (scim2-parse-filter's), the
 * lenient reading of bare values Microsoft's validator sends, and the SQL a filter compiles to,
 * read through Kysely's compile-only Postgres dialect.
 */
const compileOnly = new Kysely<Record<string, never>>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** userName and active as columns, emails as a JSON column. */
function resolver(compiler: FilterCompiler): Resolver {
  return (path) => {
    const [head] = path;
    if (head === 'userName') return { kind: 'scalar', sql: sql`u.user_name`, type: 'string' };
    if (head === 'externalId') return { kind: 'scalar', sql: sql`u.external_id`, type: 'string', caseExact: true };
    if (head === 'active') return { kind: 'scalar', sql: sql`u.active`, type: 'boolean' };
    if (head === 'emails') return compiler.jsonResolver(sql`u.attributes`)(path);
    throw new Error(`no attribute ${path.join('.')}`);
  };
}

function toSql(filter: string) {
  const compiler = new FilterCompiler();
  return compiler.compile(parseFilter(filter), resolver(compiler)).compile(compileOnly);
}

describe('parseFilter', () => {
  it('parses RFC 7644 §3.4.2.2 filters', () => {
    expect(parseFilter('userName eq "bjensen"')).toMatchObject({ op: 'eq', attrPath: 'userName', compValue: 'bjensen' });
    expect(parseFilter('emails[type eq "work" and value co "@example.com"]')).toMatchObject({ op: '[]', attrPath: 'emails' });
    expect(parseFilter('active eq true or userName sw "a"')).toMatchObject({ op: 'or' });
  });

  it('reads bare words after an operator as strings only when the filter does not parse as it is', () => {
    expect(quoteBareValues('name.familyName eq Employee')).toBe('name.familyName eq "Employee"');
    expect(quoteBareValues('active eq true')).toBe('active eq true');
    expect(quoteBareValues('userName eq "already quoted" and x eq 12')).toBe('userName eq "already quoted" and x eq 12');
    expect(parseFilter('name.familyName eq Employee')).toMatchObject({ compValue: 'Employee' });
  });

  it('a filter that cannot be read is 400 invalidFilter', () => {
    for (const bad of ['userName eq', '(userName eq "a"', 'userName zz "a"']) {
      let error: unknown;
      try {
        parseFilter(bad);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ScimError);
      expect((error as ScimError).scimType).toBe('invalidFilter');
      expect((error as ScimError).status).toBe(400);
    }
  });
});

describe('FilterCompiler', () => {
  it('binds every value as a parameter: nothing of the filter reaches the SQL text', () => {
    const q = toSql(`userName eq "x'); DROP TABLE users; --"`);
    expect(q.sql).not.toContain('DROP');
    expect(q.parameters).toContain("x'); DROP TABLE users; --");
  });

  it('compares strings case-insensitively unless the attribute is case-exact (RFC 7643 §2.2)', () => {
    const loose = toSql('userName eq "Ada"');
    expect(loose.sql).toMatch(/lower\(u\.user_name\) = lower\(\$1\)/);
    expect(loose.parameters).toEqual(['Ada']);
    const exact = toSql('externalId eq "Ada"');
    expect(exact.sql).not.toContain('lower(');
    expect(exact.sql).toContain('u.external_id = $1');
    expect(exact.parameters).toEqual(['Ada']);
  });

  it('a multi-valued attribute becomes an EXISTS over its elements', () => {
    const q = toSql('emails[type eq "work"]');
    expect(q.sql).toMatch(/exists/i);
    expect(q.sql).toContain('jsonb_array_elements');
  });
});
