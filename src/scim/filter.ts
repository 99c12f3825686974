import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { parse, type Compare, type Filter } from 'scim2-parse-filter';
import { parseAttrPath } from './attributes';
import { ScimError, scimInvalid } from './errors';

/**
 * SCIM filters (RFC 7644 §3.4.2.2) compiled to SQL. The grammar is scim2-parse-filter's; its own
 * matcher runs in memory and compares case-sensitively, so only its AST is used: each attribute
 * resolves to a column or a JSON expression of the resource's table, comparisons are bound
 * parameters, and strings compare through lower() unless the attribute is case-exact (RFC 7643
 * §2.2: `externalId` and `id` are; `userName`, `emails.value` and `displayName` are not).
 */
export type AttrType = 'string' | 'boolean' | 'datetime' | 'json';

export interface Scalar {
  kind: 'scalar';
  sql: RawBuilder<unknown>;
  type: AttrType;
  caseExact?: boolean;
  /** The column already holds the lower-cased value (compare with lower(value) only, so an index serves it). */
  lowered?: boolean;
}

/** A multi-valued (or complex) attribute: a set of elements, matched with EXISTS. */
export interface Multi {
  kind: 'multi';
  /** FROM item producing the elements. */
  from: RawBuilder<unknown>;
  /** Resolves sub-attribute paths of one element. */
  element: Resolver;
  /** The rest of the path after the attribute (empty: `defaultSub`). */
  rest: string[];
  defaultSub: string[];
}

export type Resolved = Scalar | Multi;
export type Resolver = (path: string[]) => Resolved;

export class FilterCompiler {
  private aliasCount = 0;

  alias(): string {
    return `scim_e${++this.aliasCount}`;
  }

  /**
   * Any JSON value: `base -> head` may be an array (multi-valued), an object (complex) or a
   * scalar; wrapping a non-array in an array lets one EXISTS serve all three.
   */
  jsonResolver(base: RawBuilder<unknown>): Resolver {
    return (path) => {
      if (path.length === 0) return { kind: 'scalar', sql: sql`(${base} #>> '{}')`, type: 'json' };
      const [head, ...rest] = path;
      const child = sql`(${base} -> ${head!})`;
      const alias = this.alias();
      return {
        kind: 'multi',
        from: sql`jsonb_array_elements(CASE jsonb_typeof(${child}) WHEN 'array' THEN ${child} ELSE jsonb_build_array(${child}) END) AS ${sql.raw(alias)}(v)`,
        element: this.jsonResolver(sql.raw(`${alias}.v`)),
        rest,
        defaultSub: [],
      };
    };
  }

  compile(filter: Filter, resolve: Resolver): RawBuilder<SqlBool> {
    switch (filter.op) {
      case 'and':
      case 'or':
        return sql<SqlBool>`(${sql.join(
          filter.filters.map((f) => this.compile(f, resolve)),
          filter.op === 'and' ? sql` AND ` : sql` OR `,
        )})`;
      case 'not':
        // An absent attribute compares as NULL; under NOT it must count as "no match", not unknown.
        return sql<SqlBool>`(NOT COALESCE(${this.compile(filter.filter, resolve)}, false))`;
      case '[]': {
        const target = resolvePath(resolve, filter.attrPath);
        if (target.kind !== 'multi' || target.rest.length > 0) throw invalidFilter(`${filter.attrPath} is not a multi-valued attribute.`);
        return sql<SqlBool>`EXISTS (SELECT 1 FROM ${target.from} WHERE ${this.compile(filter.valFilter, target.element)})`;
      }
      default:
        return this.leaf(resolvePath(resolve, filter.attrPath), filter);
    }
  }

  private leaf(target: Resolved, filter: Filter & { attrPath: string }): RawBuilder<SqlBool> {
    if (target.kind === 'multi') {
      const sub = target.element(target.rest.length > 0 ? target.rest : target.defaultSub);
      return sql<SqlBool>`EXISTS (SELECT 1 FROM ${target.from} WHERE ${this.leaf(sub, filter)})`;
    }
    if (filter.op === 'pr') {
      return target.type === 'string' || target.type === 'json' ? sql<SqlBool>`(${target.sql} IS NOT NULL AND ${target.sql} <> '')` : sql<SqlBool>`(${target.sql} IS NOT NULL)`;
    }
    const leaf = filter as Compare;
    return compare(target, leaf.op, leaf.compValue, leaf.attrPath);
  }
}

function invalidFilter(detail: string): ScimError {
  return scimInvalid('invalidFilter', detail);
}

function resolvePath(resolve: Resolver, attrPath: string): Resolved {
  let segments: string[];
  try {
    segments = parseAttrPath(attrPath);
  } catch {
    throw invalidFilter(`"${attrPath}" is not an attribute path.`);
  }
  return resolve(segments);
}

const OPERATORS = { eq: '=', ne: 'IS DISTINCT FROM', gt: '>', ge: '>=', lt: '<', le: '<=' } as const;

function likePattern(value: string, op: 'co' | 'sw' | 'ew'): string {
  const escaped = value.replace(/[\\%_]/g, (c) => `\\${c}`);
  return op === 'co' ? `%${escaped}%` : op === 'sw' ? `${escaped}%` : `%${escaped}`;
}

function compare(target: Scalar, op: 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'lt' | 'ge' | 'le', value: unknown, attrPath: string): RawBuilder<SqlBool> {
  if (value === null) {
    if (op === 'eq') return sql<SqlBool>`(${target.sql} IS NULL)`;
    if (op === 'ne') return sql<SqlBool>`(${target.sql} IS NOT NULL)`;
    throw invalidFilter(`${op} null is not a comparison.`);
  }
  if (target.type === 'boolean' || typeof value === 'boolean') {
    const bool = typeof value === 'boolean' ? value : typeof value === 'string' && /^(true|false)$/i.test(value) ? value.toLowerCase() === 'true' : undefined;
    if (bool === undefined || (op !== 'eq' && op !== 'ne')) throw invalidFilter(`${attrPath} compares only with eq or ne and true or false.`);
    const lhs = target.type === 'boolean' ? target.sql : sql`lower(${target.sql})`;
    const rhs = target.type === 'boolean' ? sql`${bool}` : sql`${String(bool)}`;
    return sql<SqlBool>`(${lhs} ${sql.raw(OPERATORS[op])} ${rhs})`;
  }
  if (target.type === 'datetime') {
    const at = typeof value === 'string' ? new Date(value) : new Date(NaN);
    if (Number.isNaN(at.getTime())) throw invalidFilter(`${attrPath} compares with a date-time string.`);
    if (op === 'co' || op === 'sw' || op === 'ew') throw invalidFilter(`${attrPath} does not support ${op}.`);
    return sql<SqlBool>`(${target.sql} ${sql.raw(OPERATORS[op])} ${at})`;
  }
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') throw invalidFilter(`${attrPath} compares with a string.`);
  const exact = target.caseExact === true;
  const lhs = exact || target.lowered ? target.sql : sql`lower(${target.sql})`;
  const rhs = exact ? sql`${text}` : sql`lower(${text})`;
  if (op === 'co' || op === 'sw' || op === 'ew') {
    const pattern = likePattern(exact ? text : text, op);
    return exact ? sql<SqlBool>`(${lhs} LIKE ${pattern})` : sql<SqlBool>`(${lhs} LIKE lower(${pattern}))`;
  }
  return sql<SqlBool>`(${lhs} ${sql.raw(OPERATORS[op])} ${rhs})`;
}

/**
 * Parses a filter; a syntax error is 400 invalidFilter. RFC 7644 §3.4.2.2 wants a JSON value
 * after an operator; Microsoft's SCIM validator sends bare words (`name.familyName eq Employee`,
 * `meta.created gt 2015-10-10T14:38:21.86-07:00`), so a filter that does not parse is tried once
 * more with each bare value read as a string. A filter that parses is never rewritten.
 */
export function parseFilter(filter: string): Filter {
  try {
    return parse(filter);
  } catch (err) {
    if (err instanceof ScimError) throw err;
    const lenient = quoteBareValues(filter);
    if (lenient !== filter) {
      try {
        return parse(lenient);
      } catch {
        // The original error says more about what the client sent.
      }
    }
    throw invalidFilter(`The filter could not be parsed: ${(err as Error).message}`.slice(0, 300));
  }
}

const JSON_LITERAL = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)$/;

/** `attr op word` → `attr op "word"` outside quoted strings, for words that are no JSON value. */
export function quoteBareValues(filter: string): string {
  // Split into quoted strings (kept as they are) and the text between them.
  return filter
    .split(/("(?:[^"\\]|\\.)*")/)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replace(/(\b(?:eq|ne|co|sw|ew|gt|ge|lt|le)\s+)([^\s()[\]"]+)/gi, (whole, op: string, word: string) => (JSON_LITERAL.test(word) ? whole : `${op}${JSON.stringify(word)}`)),
    )
    .join('');
}
