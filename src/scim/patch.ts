import type { Filter } from 'scim2-parse-filter';
import { attributeObject, findKey, isObject, normalize, parseAttrPath, type Json, type JsonObject } from './attributes';
import { scimInvalid } from './errors';
import { parseFilter } from './filter';

/**
 * RFC 7644 §3.5.2 PATCH applied to a resource document (canonical attribute names). Hand-written
 * rather than scim-patch: identity providers' forms are normalised first (operation names in any
 * case, "False", nulls, pathless values whose keys are attribute paths), and the result is then
 * saved through the same code as a PUT, so PATCH and PUT cannot disagree on the rules.
 */
export interface PatchOperation {
  op: string;
  path?: string;
  value?: Json;
}

/** Attributes a PATCH cannot change (ignored when an IdP echoes them back, e.g. Okta's `id`). */
const READ_ONLY = new Set(['id', 'meta', 'schemas', 'groups']);

export function applyPatch(document: JsonObject, operations: PatchOperation[]): JsonObject {
  const doc = structuredClone(document);
  for (const raw of operations) {
    const op = String(raw.op ?? '').toLowerCase();
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw scimInvalid('invalidSyntax', `Unknown PATCH op "${String(raw.op)}".`);
    const path = typeof raw.path === 'string' && raw.path.trim() !== '' ? raw.path : undefined;
    if (raw.path !== undefined && typeof raw.path !== 'string') throw scimInvalid('invalidPath', 'path must be a string.');
    if (!path) {
      if (op === 'remove') throw scimInvalid('noTarget', 'A remove needs a path.');
      const value = raw.value;
      if (!isObject(value)) throw scimInvalid('invalidValue', `A ${op} without a path needs an object value.`);
      for (const [key, v] of Object.entries(value)) {
        if (READ_ONLY.has(key.toLowerCase())) continue;
        applyAt(doc, op, parsePath(key), v);
      }
      continue;
    }
    applyAt(doc, op, parsePath(path), raw.value);
  }
  return doc;
}

interface ParsedPath {
  attr: string[];
  filter?: Filter;
  sub?: string;
}

/** `attr`, `attr.sub`, `urn:…:attr.sub`, `attr[filter]`, `attr[filter].sub`. */
export function parsePath(path: string): ParsedPath {
  const match = /^([^[\]]+)\[(.+)\](?:\.([A-Za-z$][\w$-]*))?$/s.exec(path.trim());
  if (!match) return { attr: parseAttrPath(path) };
  const attr = parseAttrPath(match[1]!);
  let filter: Filter;
  try {
    filter = parseFilter(match[2]!);
  } catch {
    throw scimInvalid('invalidPath', `"${path}" has an invalid value filter.`);
  }
  return { attr, filter, sub: match[3] ? parseAttrPath(match[3])[0] : undefined };
}

function applyAt(doc: JsonObject, op: 'add' | 'replace' | 'remove', path: ParsedPath, rawValue: Json | undefined): void {
  if (READ_ONLY.has(path.attr[0]!) && path.attr.length >= 1) {
    if (path.attr[0] === 'groups') throw scimInvalid('mutability', 'groups is read-only; change Group members instead.');
    return;
  }
  const leafName = path.sub ?? path.attr[path.attr.length - 1]!;
  const value = rawValue === undefined ? undefined : normalize(rawValue, leafName);
  // Entra sends `null` (and Okta empty values) for "no value": that is a removal.
  if (op !== 'remove' && value === undefined) return applyAt(doc, 'remove', path, undefined);

  const { parent, key } = locate(doc, path.attr, op !== 'remove');
  if (!parent) return;
  const current = parent[key];

  if (path.filter) {
    const list = Array.isArray(current) ? current : current === undefined ? [] : [current];
    const matches = list.filter((el) => isObject(el) && matchElement(el, path.filter!));
    if (op === 'remove') {
      if (path.sub) matches.forEach((el) => removeKey(el as JsonObject, path.sub!));
      else parent[key] = list.filter((el) => !matches.includes(el));
    } else if (matches.length === 0) {
      // No element matches (a user without a "work" e-mail yet): add one carrying the filter's equalities.
      const created = elementFromFilter(path.filter);
      if (path.sub) created[path.sub] = value!;
      else if (isObject(value)) Object.assign(created, value);
      else throw scimInvalid('invalidValue', 'A value filter without a sub-attribute needs an object value.');
      parent[key] = [...list, created];
    } else {
      for (const el of matches as JsonObject[]) {
        if (path.sub) el[findKey(el, path.sub) ?? path.sub] = value!;
        else if (isObject(value)) Object.assign(el, value);
        else throw scimInvalid('invalidValue', 'A value filter without a sub-attribute needs an object value.');
      }
      parent[key] = list;
    }
    if (Array.isArray(parent[key]) && (parent[key] as Json[]).length === 0) delete parent[key];
    return;
  }

  if (op === 'remove') {
    // Entra removes group members with `path: members` and the members to remove as the value.
    if (Array.isArray(current) && Array.isArray(rawValue) && rawValue.length > 0) {
      const drop = new Set(rawValue.map((v) => (isObject(v) ? String(v.value ?? '') : String(v))));
      const kept = current.filter((el) => !(isObject(el) && drop.has(String(el.value ?? ''))));
      if (kept.length > 0) parent[key] = kept;
      else delete parent[key];
    } else {
      delete parent[key];
    }
    return;
  }
  if (op === 'add' && Array.isArray(current)) {
    const additions = Array.isArray(value) ? value : [value!];
    const seen = new Set(current.map((el) => JSON.stringify(isObject(el) && 'value' in el ? el.value : el)));
    parent[key] = [...current, ...additions.filter((el) => !seen.has(JSON.stringify(isObject(el) && 'value' in el ? el.value : el)))];
    return;
  }
  if (isObject(current) && isObject(value)) {
    // add and replace on a complex attribute set the given sub-attributes and keep the others.
    for (const [k, v] of Object.entries(value)) current[findKey(current, k) ?? k] = v;
    return;
  }
  parent[key] = value!;
}

/** The object holding the path's last attribute and that attribute's key (creating objects on the way when asked). */
function locate(doc: JsonObject, attr: string[], create: boolean): { parent: JsonObject | null; key: string } {
  let node = doc;
  for (const name of attr.slice(0, -1)) {
    const key = findKey(node, name) ?? name;
    let next = node[key];
    if (!isObject(next)) {
      if (!create) return { parent: null, key: '' };
      if (next !== undefined) throw scimInvalid('invalidPath', `${attr.join('.')} does not name a sub-attribute.`);
      next = attributeObject();
      node[key] = next;
    }
    node = next;
  }
  const last = attr[attr.length - 1]!;
  return { parent: node, key: findKey(node, last) ?? last };
}

function removeKey(obj: JsonObject, name: string): void {
  const key = findKey(obj, name);
  if (key !== undefined) delete obj[key];
}

function elementFromFilter(filter: Filter): JsonObject {
  if (filter.op === 'eq' && typeof filter.compValue !== 'object') {
    const element = attributeObject();
    element[parseAttrPath(filter.attrPath)[0]!] = filter.compValue as Json;
    return element;
  }
  if (filter.op === 'and') return Object.assign(attributeObject(), ...filter.filters.map(elementFromFilter)) as JsonObject;
  throw scimInvalid('noTarget', 'No value matches the path filter.');
}

/** In-memory match of one element against a value filter; strings compare ignoring case. */
export function matchElement(el: JsonObject, filter: Filter): boolean {
  switch (filter.op) {
    case 'and':
      return filter.filters.every((f) => matchElement(el, f));
    case 'or':
      return filter.filters.some((f) => matchElement(el, f));
    case 'not':
      return !matchElement(el, filter.filter);
    case '[]':
      throw scimInvalid('invalidPath', 'Nested value filters are not supported.');
    default: {
      const key = findKey(el, parseAttrPath(filter.attrPath)[0]!);
      const actual = key === undefined ? undefined : el[key];
      if (filter.op === 'pr') return actual !== undefined && actual !== null && actual !== '';
      const a = typeof actual === 'string' ? actual.toLowerCase() : actual;
      const b = typeof filter.compValue === 'string' ? filter.compValue.toLowerCase() : filter.compValue;
      switch (filter.op) {
        case 'eq':
          return a === b || (typeof a === 'boolean' && String(a) === b);
        case 'ne':
          return a !== b;
        case 'co':
          return typeof a === 'string' && typeof b === 'string' && a.includes(b);
        case 'sw':
          return typeof a === 'string' && typeof b === 'string' && a.startsWith(b);
        case 'ew':
          return typeof a === 'string' && typeof b === 'string' && a.endsWith(b);
        default: {
          if (a === undefined || a === null || b === null || typeof a === 'object') return false;
          const cmp = a < b! ? -1 : a > b! ? 1 : 0;
          return filter.op === 'gt' ? cmp > 0 : filter.op === 'ge' ? cmp >= 0 : filter.op === 'lt' ? cmp < 0 : cmp <= 0;
        }
      }
    }
  }
}
