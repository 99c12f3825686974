import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The bundled contract (generated/openapi.json) as a list of operations, with every `$ref`
 * resolved, so suites can be generated from it: a new operation is covered without anyone adding
 * it to a list.
 */
export type Schema = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  additionalProperties?: boolean | Schema;
};

export interface SpecParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Schema;
}

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface SpecOperation {
  operationId: string;
  method: Method;
  path: string;
  summary: string;
  description: string;
  tags: string[];
  /** `public`: security [] (or a credential optional: an empty requirement `{}` among them); `session`: bearer only; `any`: a session or an API key; `worker`: a worker's token; `scim`: a SCIM token. */
  auth: 'public' | 'session' | 'any' | 'worker' | 'scim';
  parameters: SpecParameter[];
  body: { required: boolean; schema: Schema } | null;
  /** Declared statuses ('200', '404', 'default', ...). */
  statuses: string[];
  /** `x-permission`: the permission key the operation needs (src/access/permissions.ts). */
  permission: string | null;
  /** `x-permission-also`: keys the operation consults besides (one that passes a resource-role rule). */
  permissionAlso: string[];
  /**
   * `x-resource-role`: the least role on the resource in the path the caller needs when it lacks
   * `permissionAlso` (`creator`: the member who created it).
   */
  resourceRole: ResourceRoleNeed | null;
  /** `x-platform-admin: true`: only a platform admin (a user flag, not an organization permission). */
  platformAdmin: boolean;
}

export type ResourceRoleNeed = 'viewer' | 'editor' | 'manager' | 'creator';

const ROOT = path.resolve(__dirname, '..', '..');
type Doc = { paths: Record<string, Record<string, unknown>>; security?: unknown[]; components?: unknown };

export function loadContract(): Doc {
  return JSON.parse(readFileSync(path.join(ROOT, 'generated', 'openapi.json'), 'utf8')) as Doc;
}

/** Resolves every local `$ref` (the bundle only has `#/components/...` ones); cycles stop at a depth. */
export function deref<T>(doc: unknown, value: T, depth = 0): T {
  if (depth > 40 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => deref(doc, v, depth + 1)) as T;
  const obj = value as Record<string, unknown>;
  if (typeof obj.$ref === 'string' && obj.$ref.startsWith('#/')) {
    const target = obj.$ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc);
    const { $ref: _ignored, ...rest } = obj;
    return deref(doc, { ...(target as object), ...rest }, depth + 1) as T;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = deref(doc, v, depth + 1);
  return out as T;
}

const METHODS: Method[] = ['get', 'post', 'put', 'patch', 'delete'];

function authOf(security: unknown): SpecOperation['auth'] {
  const list = (security ?? []) as Record<string, unknown>[];
  // An empty requirement makes credentials optional: anyone may call it (POST /v1/invitations/accept).
  if (list.length === 0 || list.some((s) => Object.keys(s).length === 0)) return 'public';
  const schemes = new Set(list.flatMap((s) => Object.keys(s)));
  if (schemes.has('scimBearer')) return 'scim';
  if (schemes.has('workerToken')) return 'worker';
  return schemes.has('orgApiKey') ? 'any' : 'session';
}

let cached: SpecOperation[] | undefined;

export function specOperations(): SpecOperation[] {
  if (cached) return cached;
  const doc = loadContract();
  const ops: SpecOperation[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    const pathItem = deref(doc, item) as Record<string, unknown>;
    const shared = (pathItem.parameters ?? []) as SpecParameter[];
    for (const method of METHODS) {
      const op = pathItem[method] as Record<string, unknown> | undefined;
      if (!op) continue;
      const params = [...shared, ...((op.parameters ?? []) as SpecParameter[])].map((x) => ({ ...x, required: Boolean(x.required) || x.in === 'path' }));
      const rb = op.requestBody as { required?: boolean; content?: Record<string, { schema?: Schema }> } | undefined;
      const schema = rb?.content?.['application/json']?.schema;
      ops.push({
        operationId: String(op.operationId),
        method,
        path: p,
        summary: String(op.summary ?? ''),
        description: String(op.description ?? ''),
        tags: (op.tags ?? []) as string[],
        auth: authOf(op.security ?? doc.security),
        parameters: params,
        body: schema ? { required: Boolean(rb?.required), schema } : null,
        statuses: Object.keys((op.responses ?? {}) as object),
        permission: typeof op['x-permission'] === 'string' ? op['x-permission'] : null,
        permissionAlso: Array.isArray(op['x-permission-also']) ? (op['x-permission-also'] as string[]) : [],
        resourceRole: (op['x-resource-role'] as ResourceRoleNeed | undefined) ?? null,
        platformAdmin: op['x-platform-admin'] === true,
      });
    }
  }
  cached = ops;
  return ops;
}

/** `/v1/marketplaces/{marketplaceId}` with values → a concrete URL (values are URL-encoded). */
export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`no value for path parameter ${name} of ${template}`);
    return encodeURIComponent(v);
  });
}

/** The TypeID prefix a string schema pins (`pattern: ^mkt_.*`), if any. */
export function typeIdPrefix(schema: Schema | undefined): string | null {
  if (!schema) return null;
  const m = typeof schema.pattern === 'string' ? /^\^([a-z]+)_/.exec(schema.pattern) : null;
  return m ? m[1]! : null;
}

/**
 * Which kind of id a schema takes, from the spec alone: the TypeID prefix its pattern pins, or
 * `x-id-prefix` on an id the contract keeps as a plain string (PluginId, WorkerId, ...);
 * 'external' for an id of another system (`x-external-id: true`); null when the spec does not say.
 */
export function idKindOf(schema: Schema | undefined): string | 'external' | null {
  if (!schema) return null;
  if (schema['x-external-id'] === true) return 'external';
  return typeIdPrefix(schema) ?? (typeof schema['x-id-prefix'] === 'string' ? schema['x-id-prefix'] : null);
}

/** Statuses an operation declares, as numbers ('default' and ranges dropped). */
export function declaredStatuses(op: SpecOperation): number[] {
  return op.statuses.filter((s) => /^\d{3}$/.test(s)).map(Number);
}

/**
 * Where an answer of the service and the contract's example of that answer disagree on a value
 * the schema fixes to a few (an enum, a const, a boolean): a plan, a role, a status, a flag. Ids,
 * names and times differ by nature and are not compared.
 */
export function fixedValueDisagreements(schema: Schema, example: unknown, answer: unknown, at = ''): string[] {
  const branches = [...(schema.oneOf ?? []), ...(schema.anyOf ?? []), ...(schema.allOf ?? [])];
  if (branches.length > 0) return branches.flatMap((branch) => (matchesType(branch, example) ? fixedValueDisagreements(branch, example, answer, at) : []));
  const fixed = schema.enum !== undefined || schema.const !== undefined || schema.type === 'boolean';
  if (fixed) return JSON.stringify(example) === JSON.stringify(answer) ? [] : [`${at || '/'}: the example says ${JSON.stringify(example)}, the service answers ${JSON.stringify(answer)}`];
  if (!isObject(example) || !isObject(answer)) return [];
  return Object.entries(schema.properties ?? {}).flatMap(([name, property]) =>
    name in example ? fixedValueDisagreements(property, example[name], answer[name], `${at}/${name}`) : [],
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function matchesType(schema: Schema, value: unknown): boolean {
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.length === 0) return true;
  const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' ? 'number' : typeof value;
  return types.some((type) => type === actual || (type === 'integer' && actual === 'number'));
}
