import { scimInvalid } from './errors';
import { isForbiddenKey } from '../lib/json-shape';

/**
 * SCIM attribute names and paths. RFC 7643 §2.1: attribute names are case-insensitive, so every
 * name the service knows is brought to its canonical spelling on the way in; names it does not
 * know are kept as the identity provider sent them (and returned as given).
 */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

const KNOWN_SCHEMAS = [USER_SCHEMA, GROUP_SCHEMA, ENTERPRISE_SCHEMA];

const NAMES = [
  // core User (RFC 7643 §4.1)
  'id', 'externalId', 'meta', 'schemas', 'userName', 'name', 'displayName', 'nickName', 'profileUrl', 'title', 'userType',
  'preferredLanguage', 'locale', 'timezone', 'active', 'password', 'emails', 'phoneNumbers', 'ims', 'photos', 'addresses',
  'groups', 'entitlements', 'roles', 'x509Certificates',
  // sub-attributes
  'formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix', 'value', 'display', 'type',
  'primary', 'streetAddress', 'locality', 'region', 'postalCode', 'country', '$ref', 'resourceType', 'created',
  'lastModified', 'location', 'version',
  // core Group
  'members',
  // enterprise extension (RFC 7643 §4.3)
  'employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager',
];
const CANONICAL = new Map(NAMES.map((n) => [n.toLowerCase(), n]));
const CANONICAL_SCHEMA = new Map(KNOWN_SCHEMAS.map((s) => [s.toLowerCase(), s]));
/** Attributes whose values are booleans (identity providers send "True"/"False"). */
const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);

export function canonicalName(name: string): string {
  if (name.includes(':')) return CANONICAL_SCHEMA.get(name.toLowerCase()) ?? name;
  return CANONICAL.get(name.toLowerCase()) ?? name;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A container for attributes a client names: no prototype, so no name (`__proto__`,
 * `constructor`) can reach Object.prototype through it, and `in` sees only what was put there.
 */
export function attributeObject(): JsonObject {
  return Object.create(null) as JsonObject;
}

/** Refuses an attribute name that reaches the prototype machinery, in any spelling of its case. */
function checkName(name: string, path: string): string {
  if (isForbiddenKey(name.toLowerCase()) || isForbiddenKey(name)) throw scimInvalid('invalidPath', `"${path.slice(0, 200)}" names "${name}", which is not an attribute.`);
  return name;
}

/** "True"/"false" → booleans for boolean attributes; anything else that is not a boolean is refused. */
export function toBoolean(value: Json | undefined, name: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw scimInvalid('invalidValue', `${name} must be a boolean.`);
}

/**
 * A resource as sent → canonical attribute names, booleans as booleans, `null` as absent (Entra
 * sends nulls for sub-attributes it has no value for). Arrays keep their order.
 */
export function normalize(value: Json, name = ''): Json | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map((v) => normalize(v, name)).filter((v): v is Json => v !== undefined);
  if (isObject(value)) {
    const out = attributeObject();
    for (const [key, v] of Object.entries(value)) {
      const canonical = canonicalName(checkName(key, key));
      const n = normalize(v, canonical);
      if (n !== undefined) out[canonical] = n;
    }
    return out;
  }
  if (BOOLEAN_ATTRIBUTES.has(name) && typeof value === 'string') return toBoolean(value, name);
  return value;
}

/** The key of `obj` that names `name` ignoring case, if any. */
export function findKey(obj: JsonObject, name: string): string | undefined {
  // Own properties only: `'constructor' in {}` is true, and `obj.__proto__` is Object.prototype.
  if (Object.hasOwn(obj, name)) return name;
  const lower = name.toLowerCase();
  return Object.keys(obj).find((k) => k.toLowerCase() === lower);
}

/**
 * An attribute path → canonical segments. `name.givenName` → [name, givenName]; the core schema's
 * URN prefix is dropped (`urn:…:core:2.0:User:userName` → [userName]); an extension keeps its URN
 * as the first segment (`urn:…:enterprise:2.0:User:manager.value` → [URN, manager, value]).
 */
export function parseAttrPath(path: string): string[] {
  const trimmed = path.trim();
  if (trimmed === '') throw scimInvalid('invalidPath', 'An attribute path is empty.');
  if (/^urn:/i.test(trimmed)) {
    const lower = trimmed.toLowerCase();
    const schema = [...CANONICAL_SCHEMA.entries()].find(([l]) => lower === l || lower.startsWith(`${l}:`));
    const [urn, rest] = schema ? [schema[1], trimmed.slice(schema[0].length + 1)] : splitUnknownUrn(trimmed);
    const attrs = rest ? rest.split('.').map((s) => canonicalName(checkName(s, path))) : [];
    if (urn === USER_SCHEMA || urn === GROUP_SCHEMA) {
      if (attrs.length === 0) throw scimInvalid('invalidPath', `"${path}" names a schema, not an attribute.`);
      return attrs;
    }
    return [checkName(urn, path), ...attrs];
  }
  const segments = trimmed.split('.');
  if (segments.some((s) => !/^[A-Za-z$][\w$-]*$/.test(s))) throw scimInvalid('invalidPath', `"${path}" is not an attribute path.`);
  return segments.map((s) => canonicalName(checkName(s, path)));
}

function splitUnknownUrn(path: string): [string, string] {
  const at = path.lastIndexOf(':');
  return [path.slice(0, at), path.slice(at + 1)];
}

/**
 * RFC 7644 §3.4.2.5 `attributes` / `excludedAttributes` applied to a resource: `id`, `schemas`
 * and `meta.resourceType` are always returned; paths compare ignoring case.
 */
export function project(resource: JsonObject, attributes: string | undefined, excluded: string | undefined): JsonObject {
  // RFC 7644 §3.4.2.5 lists attribute names; Microsoft's validator asks for
  // `emails[type eq "work"]`: the value filter is dropped and the whole attribute returned.
  const list = (value: string | undefined) =>
    (value ?? '')
      .split(/,(?![^[]*\])/)
      .map((s) => s.replace(/\[[^\]]*\]/g, '').trim())
      .filter(Boolean)
      .map(parseAttrPath);
  const include = list(attributes);
  if (include.length > 0) {
    const out = attributeObject();
    out.schemas = resource.schemas ?? [];
    out.id = resource.id ?? null;
    for (const path of include) copyPath(resource, out, path);
    return out;
  }
  const exclude = list(excluded);
  if (exclude.length === 0) return resource;
  const out = structuredClone(resource);
  for (const path of exclude) {
    if (path.length === 1 && (path[0] === 'id' || path[0] === 'schemas')) continue;
    removePath(out, path);
  }
  return out;
}

function copyPath(from: JsonObject, to: JsonObject, path: string[]): void {
  const key = findKey(from, path[0]!);
  if (key === undefined) return;
  const value = from[key]!;
  if (path.length === 1) {
    to[key] = structuredClone(value);
    return;
  }
  if (Array.isArray(value)) {
    const existing = Array.isArray(to[key]) ? (to[key] as Json[]) : value.map(() => attributeObject());
    value.forEach((item, i) => {
      if (isObject(item) && isObject(existing[i])) copyPath(item, existing[i] as JsonObject, path.slice(1));
    });
    to[key] = existing;
  } else if (isObject(value)) {
    const target = isObject(to[key]) ? (to[key] as JsonObject) : attributeObject();
    copyPath(value, target, path.slice(1));
    to[key] = target;
  }
}

function removePath(obj: JsonObject, path: string[]): void {
  const key = findKey(obj, path[0]!);
  if (key === undefined) return;
  if (path.length === 1) {
    delete obj[key];
    return;
  }
  const value = obj[key];
  if (Array.isArray(value)) value.forEach((item) => isObject(item) && removePath(item, path.slice(1)));
  else if (isObject(value)) removePath(value, path.slice(1));
}
