import { fillPath, type Schema, type SpecOperation } from '../support/spec';
import { concrete, mainType, validValue } from '../support/schema-values';
import { idsOf, SEED, type GenRequest } from './generate';
import { pathValues, type OrgWorld } from './world';

/**
 * Requests that hurt the process rather than a tenant, generated for every operation from its
 * schema: prototype keys (`__proto__`, `constructor`, `prototype`) wherever a body takes keys the
 * client chooses, and wherever a SCIM client names an attribute (PATCH paths, filters, attribute
 * lists); and JSON nested past the body layer's depth limit at those places. A new route group
 * with a free-form object or a SCIM-style path is covered without anyone listing it.
 */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
/** Past the depth the body layer accepts (src/lib/json-shape.ts: 64). */
const OVER_DEEP = 100;
/** Free-form places exercised per operation (the first found, outermost first). */
const PLACES_PER_OPERATION = 3;
/** Keys written onto `Object.prototype` by a polluting request of this file. */
export const POLLUTION_MARKERS = ['polluted'];

const KEY_SLOT = 'hostile_key_slot_7f3a';
const VALUE_SLOT = 'hostile_value_slot_7f3a';

/**
 * Where a body schema takes keys the client chooses: objects whose property list is not closed
 * (`additionalProperties` not false) and untyped values. Array items are reached at index 0.
 */
export function freeFormPlaces(schema: Schema, at: string[] = [], out: string[][] = [], depth = 0): string[][] {
  if (depth > 8) return out;
  const s = concrete(schema);
  const type = mainType(s);
  if (type === 'array') {
    if (s.items) freeFormPlaces(s.items, [...at, '0'], out, depth + 1);
    return out;
  }
  if (type === undefined && !s.enum && s.const === undefined) {
    out.push(at);
    return out;
  }
  if (type !== 'object') return out;
  if (s.additionalProperties !== false) out.push(at);
  for (const [name, prop] of Object.entries(s.properties ?? {})) freeFormPlaces(prop, [...at, name], out, depth + 1);
  return out;
}

/** String properties a SCIM client names attributes with (`Operations[].path`). */
function attributePathPlaces(schema: Schema, at: string[] = [], out: string[][] = [], depth = 0): string[][] {
  if (depth > 8) return out;
  const s = concrete(schema);
  const type = mainType(s);
  if (type === 'array' && s.items) return attributePathPlaces(s.items, [...at, '0'], out, depth + 1);
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    if (name === 'path' && mainType(concrete(prop)) === 'string') out.push([...at, name]);
    else attributePathPlaces(prop, [...at, name], out, depth + 1);
  }
  return out;
}

/**
 * The body as JSON text with one slot: a key inside the object at `at` (`key`), or the value at
 * `at` (`value`). Containers on the way are made when the valid body lacks them (the body layer
 * judges keys and depth before any schema does).
 */
function withSlot(body: unknown, at: string[], mode: 'key' | 'value'): string {
  const root: Record<string, unknown> = body !== null && typeof body === 'object' && !Array.isArray(body) ? structuredClone(body as Record<string, unknown>) : {};
  const containers = mode === 'key' ? at : at.slice(0, -1);
  let node = root as Record<string, unknown>;
  containers.forEach((seg, i) => {
    const wantArray = /^\d+$/.test(at[i + 1] ?? '');
    const child = node[seg];
    const fits = child !== null && typeof child === 'object' && Array.isArray(child) === wantArray;
    if (!fits) node[seg] = wantArray ? [] : {};
    node = node[seg] as Record<string, unknown>;
  });
  if (mode === 'key') node[KEY_SLOT] = VALUE_SLOT;
  else node[at[at.length - 1]!] = VALUE_SLOT;
  return JSON.stringify(root);
}

function keyAt(body: unknown, at: string[], key: string, value: string): string {
  return withSlot(body, at, 'key').replace(`"${KEY_SLOT}":"${VALUE_SLOT}"`, `${JSON.stringify(key)}:${value}`);
}

function valueAt(body: unknown, at: string[], value: string): string {
  return withSlot(body, at, 'value').replace(`"${VALUE_SLOT}"`, value);
}

/** The body with `{op: 'add', value: {polluted: true}}` at `at` (the PATCH, path aside). */
function withOperation(body: unknown, at: string[]): unknown {
  const root = JSON.parse(valueAt(body, at, '{"op":"add","value":{"polluted":true}}')) as unknown;
  return root;
}

/** SCIM query parameters that name attributes, and what to name in them. */
const SCIM_QUERY_CASES: Record<string, string[]> = {
  filter: ['__proto__ pr', 'name.constructor eq "x"'],
  attributes: ['constructor', 'name.__proto__'],
  excludedAttributes: ['prototype'],
};

const SCIM_PATH_CASES = ['__proto__', 'name.constructor', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:__proto__'];

/**
 * The hostile requests for one operation. Each must get a 4xx (a 400 naming the place, for the
 * contract's own error shape) and change nothing; none may write onto `Object.prototype`.
 */
export function hostileRequests(op: SpecOperation, world: OrgWorld): GenRequest[] {
  const url = fillPath(op.path, pathValues(op, world));
  const query: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'query' && x.required)) query[p.name] = String(validValue(p.schema, idsOf(world), SEED));
  const scim = op.auth === 'scim';
  const out: GenRequest[] = [];
  const base = { method: op.method, url, query };

  if (op.body) {
    const body = validValue(op.body.schema, idsOf(world), SEED);
    const raw = (data: string) => ({ contentType: 'application/json', data });
    freeFormPlaces(op.body.schema)
      .slice(0, PLACES_PER_OPERATION)
      .forEach((at, i) => {
        const where = ['body', ...at];
        const label = `body${at.length ? '.' + at.join('.') : ''}`;
        const keys = i === 0 ? PROTOTYPE_KEYS : (['__proto__'] as const);
        for (const key of keys) {
          const value = key === 'constructor' ? '{"prototype":{"polluted":true}}' : '{"polluted":true}';
          out.push({ ...base, label: `${label}: a "${key}" key`, raw: raw(keyAt(body, at, key, value)), expectPath: scim ? [key] : [...where, key] });
        }
        const deep = `${'{"a":'.repeat(OVER_DEEP)}1${'}'.repeat(OVER_DEEP)}`;
        out.push({ ...base, label: `${label}: nested ${OVER_DEEP} deep`, raw: raw(keyAt(body, at, 'nested', deep)), expectPath: scim ? undefined : where });
      });
    if (scim) {
      for (const at of attributePathPlaces(op.body.schema)) {
        // A PATCH operation otherwise valid (the generated `op` is any string): only the path is wrong.
        const operation = withOperation(body, at.slice(0, -1));
        for (const path of SCIM_PATH_CASES) out.push({ ...base, label: `body.${at.join('.')}: ${path}`, raw: raw(valueAt(operation, at, JSON.stringify(path))) });
      }
    }
  }
  if (scim) {
    for (const param of op.parameters.filter((p) => p.in === 'query' && SCIM_QUERY_CASES[p.name])) {
      for (const value of SCIM_QUERY_CASES[param.name]!) out.push({ ...base, label: `query.${param.name}: ${value}`, query: { ...query, [param.name]: value }, body: undefined });
    }
  }
  return out;
}
