import fc from 'fast-check';
import { typeid } from 'typeid-js';
import { idKindOf, typeIdPrefix, type Schema } from './spec';

/**
 * Values from JSON schemas of the contract: valid ones (fast-check arbitraries, for "a valid
 * random request never gets a 5xx") and a fixed catalogue of invalid ones per schema (for "a bad
 * request gets a 4xx naming the field"). `idFor(prefix)` supplies real ids of the caller's
 * organization where a schema asks for a TypeID, so valid requests reach the handlers.
 */
export type IdFor = (prefix: string) => string | undefined;

function nonNullBranches(schemas: Schema[]): Schema[] {
  return schemas.filter((s) => s.type !== 'null');
}

export function mainType(schema: Schema): string | undefined {
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== 'null');
  if (schema.type) return schema.type;
  if (schema.properties) return 'object';
  if (schema.items) return 'array';
  return undefined;
}

/** Collapses allOf/oneOf/anyOf to one concrete schema to generate from (the first non-null branch). */
export function concrete(schema: Schema): Schema {
  if (schema.allOf) return schema.allOf.reduce<Schema>((acc, s) => ({ ...acc, ...concrete(s), properties: { ...acc.properties, ...concrete(s).properties }, required: [...(acc.required ?? []), ...(concrete(s).required ?? [])] }), { ...schema, allOf: undefined });
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches) {
    const { oneOf: _o, anyOf: _a, ...rest } = schema;
    return concrete({ ...rest, ...(nonNullBranches(branches)[0] ?? branches[0]) });
  }
  return schema;
}

const SAFE_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789 -_';

function stringArb(schema: Schema, idFor: IdFor): fc.Arbitrary<string> {
  if (schema.enum) return fc.constantFrom(...(schema.enum as string[]));
  if (schema.const !== undefined) return fc.constant(String(schema.const));
  const kind = idKindOf(schema);
  const prefix = kind === 'external' ? null : kind;
  if (prefix || schema.format === 'typeid') {
    const known = prefix ? idFor(prefix) : undefined;
    return known ? fc.constant(known) : fc.constant(typeid(prefix ?? 'x').toString());
  }
  switch (schema.format) {
    case 'email':
      return fc.stringMatching(/^[a-z]{1,12}$/).map((s) => `${s}@example.test`);
    case 'uri':
    case 'url':
      return fc.stringMatching(/^[a-z]{1,12}$/).map((s) => `https://${s}.example.test/`);
    case 'date-time':
      return fc.integer({ min: 0, max: 3_000_000 }).map((s) => new Date(Date.now() + s * 1000).toISOString());
    case 'date':
      return fc.constant(new Date().toISOString().slice(0, 10));
    default:
      break;
  }
  if (schema.pattern && /https\?/.test(schema.pattern)) return fc.stringMatching(/^[a-z]{1,12}$/).map((s) => `https://${s}.example.test/`);
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, Math.max(min, 40));
  const base = fc.string({ unit: fc.constantFrom(...SAFE_CHARS.split('')), minLength: Math.max(min, 1), maxLength: Math.max(max, 1) });
  if (schema.pattern) {
    try {
      return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity));
    } catch {
      return base;
    }
  }
  return base.map((s) => (s.trim().length === 0 ? 'x'.repeat(Math.max(min, 1)) : s));
}

/** An arbitrary of values valid against `schema` (within the limits we generate: short strings, few items). */
export function validArbitrary(input: Schema, idFor: IdFor, depth = 0): fc.Arbitrary<unknown> {
  const schema = concrete(input);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (mainType(schema)) {
    case 'string':
      return stringArb(schema, idFor);
    case 'integer': {
      const min = schema.minimum ?? 0;
      return fc.integer({ min, max: Math.min(schema.maximum ?? min + 1000, min + 1000) });
    }
    case 'number':
      return fc.double({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 1000, 1e6), noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.min(schema.maxItems ?? 3, Math.max(minLength, 3));
      if (depth > 4) return fc.constant([]);
      const items = validArbitrary(schema.items ?? {}, idFor, depth + 1);
      if (schema.uniqueItems === true) return fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) });
      return fc.array(items, { minLength, maxLength });
    }
    case 'object': {
      const props = schema.properties ?? {};
      if (depth > 5) return fc.constant({});
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = validArbitrary(v, idFor, depth + 1);
      if (Object.keys(model).length === 0) return fc.constant({});
      return fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in model) });
    }
    default:
      return fc.constant('x');
  }
}

/** One deterministic valid value: the first sample for a fixed seed. */
export function validValue(schema: Schema, idFor: IdFor, seed = 1): unknown {
  return fc.sample(validArbitrary(schema, idFor), { seed, numRuns: 1 })[0];
}

export interface BadValue {
  label: string;
  value: unknown;
}

/** A deeply nested JSON value (the parser and validator must refuse or bound it, never crash). */
export function deepNesting(levels: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
}

/** Invalid values for one schema: wrong types, out-of-range lengths and numbers, wrong TypeIDs. */
export function badValuesFor(input: Schema): BadValue[] {
  const schema = concrete(input);
  const type = mainType(schema);
  const nullable = Array.isArray(input.type) ? input.type.includes('null') : Boolean((input.oneOf ?? input.anyOf)?.some((s) => s.type === 'null'));
  const out: BadValue[] = [];
  if (type !== 'object') out.push({ label: 'an object', value: { nested: true } });
  if (type !== 'array') out.push({ label: 'an array', value: [1, 2] });
  if (type !== 'string' && type !== undefined) out.push({ label: 'a string', value: 'not-the-right-type' });
  if (type === 'string' || type === 'object' || type === 'array') out.push({ label: 'a number', value: 12345 });
  if (type === 'boolean') out.push({ label: 'a number', value: 2 });
  if (!nullable && type !== undefined) out.push({ label: 'null', value: null });
  if (type === 'string') {
    if (schema.maxLength !== undefined) out.push({ label: `${schema.maxLength + 1} characters`, value: 'a'.repeat(schema.maxLength + 1) });
    else if (!schema.enum && !schema.format && !schema.pattern) out.push({ label: '100k characters', value: 'a'.repeat(100_000) });
    if ((schema.minLength ?? 0) > 0) out.push({ label: 'an empty string', value: '' });
    // Postgres text cannot hold U+0000: a valid-looking string with one must be refused, not crash the insert.
    if (!schema.enum && !schema.const) out.push({ label: 'a NUL character', value: 'a\u0000b' });
    if (schema.enum) out.push({ label: 'a value outside the enum', value: 'not_in_enum' });
    const prefix = typeIdPrefix(schema);
    if (prefix || schema.format === 'typeid') {
      const good = typeid(prefix ?? 'x').toString();
      out.push({ label: 'a TypeID with a wrong prefix', value: good.replace(/^[a-z]+_/, prefix === 'usr' ? 'org_' : 'usr_') });
      out.push({ label: 'a TypeID one character short', value: good.slice(0, -1) });
      out.push({ label: 'a TypeID with a bad suffix character', value: `${good.slice(0, -1)}u` });
    }
    if (schema.format === 'email') out.push({ label: 'not an e-mail', value: 'not-an-email' });
    if (schema.format === 'date-time') out.push({ label: 'not a date-time', value: 'yesterday' });
    if (schema.format === 'uri' || /https\?/.test(schema.pattern ?? '')) out.push({ label: 'not an http URL', value: 'javascript:alert(1)' });
  }
  if (type === 'integer' || type === 'number') {
    if (schema.minimum !== undefined) out.push({ label: 'below the minimum', value: schema.minimum - 1 });
    if (schema.maximum !== undefined) out.push({ label: 'above the maximum', value: schema.maximum + 1 });
    if (type === 'integer') out.push({ label: 'a fraction', value: 1.5 });
  }
  if (type === 'array' && schema.maxItems !== undefined) {
    // One valid item, repeated: building the item's arbitrary per item (a pattern's is costly to
    // build) made this the bad-input walk's largest cost, for the same value every time.
    const item = schema.items ? fc.sample(validArbitrary(schema.items, () => undefined), { seed: 7, numRuns: 1 })[0] : 1;
    out.push({ label: `${schema.maxItems + 1} items`, value: Array.from({ length: schema.maxItems + 1 }, () => item) });
  }
  if (type === 'array' && schema.maxItems === undefined) out.push({ label: '10k items of the wrong type', value: Array.from({ length: 10_000 }, () => ({ x: 1 })) });
  return out;
}
