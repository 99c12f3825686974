import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';
import type { TestApp } from '../support/app';
import { addMember, bearer, createOrganization, uniqueEmail, type OrgMember, type OrgOwner } from '../support/factories';
import { fillPath, notImplementedOperations, specOperations, typeIdPrefix, type SpecOperation, type SpecParameter } from '../support/spec';

/**
 * One organization with one of every resource kind the contract has, created through the API
 * where the route exists (a route not built yet is skipped and noted, never fatal). The hardening
 * suites point generated requests at these ids.
 */
export interface OrgWorld {
  owner: OrgOwner;
  admin: OrgMember;
  /** A plain member: the caller in "a member without the role gets 403" checks. */
  member: OrgMember;
  /** Another plain member: the target of member, team and grant operations. */
  target: OrgMember;
  /** An API key of the owner, if the API-key route exists (else inserted directly). */
  ownerKey: string;
  /** Ids by TypeID prefix ('mkt', 'mag', 'wrk', ...), the most specific first. */
  ids: Record<string, string[]>;
  /** Every secret handed out while building the world, labelled (for the plain-text scans). */
  secrets: Record<string, string>;
  /** Steps that could not run (route not built yet, or refused), for the report. */
  notes: string[];
}

const TYPEID = /^([a-z]+)_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** Path segment before a parameter → the TypeID prefix of the resource it names. */
const SEGMENT_PREFIX: Record<string, string> = {
  marketplaces: 'mkt',
  plugins: 'plg',
  'connector-instances': 'cin',
  'mcp-connections': 'emc',
  workers: 'wrk',
  teams: 'tem',
  members: 'om',
  invitations: 'inv',
  'api-keys': 'apk',
  organizations: 'org',
};
/** Grants are named by their parent: /marketplaces/{m}/access/{grantId} is a marketplace grant. */
const GRANT_PREFIX: Record<string, string> = { mkt: 'mag', plg: 'pag', cin: 'cia', emc: 'mcg' };

/** Which kind of id a path parameter takes, from its schema's pattern or the path around it. */
export function prefixForParam(op: SpecOperation, param: SpecParameter): string | null {
  const pinned = typeIdPrefix(param.schema);
  if (pinned) return pinned;
  const segments = op.path.split('/');
  const at = segments.indexOf(`{${param.name}}`);
  const before = segments[at - 1] ?? '';
  if (before === 'access') {
    const parent = SEGMENT_PREFIX[segments[at - 3] ?? ''];
    return parent ? (GRANT_PREFIX[parent] ?? null) : null;
  }
  return SEGMENT_PREFIX[before] ?? null;
}

function collectIds(value: unknown, into: Record<string, string[]>): void {
  if (typeof value === 'string') {
    const m = TYPEID.exec(value);
    const list = m ? (into[m[1]!] ??= []) : null;
    if (list && !list.includes(value)) list.push(value);
  } else if (Array.isArray(value)) value.forEach((v) => collectIds(v, into));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => collectIds(v, into));
}

export async function buildWorld(t: TestApp, label: string): Promise<OrgWorld> {
  const available = new Set(specOperations().map((o) => o.operationId));
  const pending = notImplementedOperations();
  const built = (operationId: string) => available.has(operationId) && !pending.has(operationId);
  const notes: string[] = [];
  const secrets: Record<string, string> = {};
  const primary: Record<string, string[]> = {};
  const seen: Record<string, string[]> = {};
  const put = (prefix: string, id: string | undefined) => {
    if (id) (primary[prefix] ??= []).push(id);
  };

  const owner = await createOrganization(t, `${label} Org`);
  const admin = await addMember(t, owner.organizationId, 'admin');
  const member = await addMember(t, owner.organizationId, 'member');
  const target = await addMember(t, owner.organizationId, 'member');
  secrets[`${label}.ownerSession`] = owner.token;
  secrets[`${label}.memberSession`] = member.token;
  put('org', owner.organizationId);
  put('om', target.memberId);
  put('usr', target.userId);

  const as = (token: string) => ({
    get: (url: string) => t.http.get(url).set(...bearer(token)),
    post: (url: string, body?: object) => t.http.post(url).set(...bearer(token)).send(body ?? {}),
    put: (url: string, body?: object) => t.http.put(url).set(...bearer(token)).send(body ?? {}),
  });
  const ownerApi = as(owner.token);

  /** Runs one creation step when its operation is built; a refusal is noted, never thrown. */
  async function step(operationId: string, what: string, run: () => Promise<Response | undefined>): Promise<Response | undefined> {
    if (!built(operationId)) {
      notes.push(`${what}: ${operationId} not built yet`);
      return undefined;
    }
    try {
      const res = await run();
      if (!res) return undefined;
      collectIds(res.body, seen);
      if (res.status >= 300) {
        notes.push(`${what}: ${operationId} answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        return undefined;
      }
      return res;
    } catch (err) {
      notes.push(`${what}: ${operationId} threw ${(err as Error).message}`);
      return undefined;
    }
  }

  // People: a team with the target in it, a pending invitation, an API key.
  const team = await step('createTeam', 'team', () => ownerApi.post('/v1/teams', { name: `${label} Team`, memberIds: [target.memberId] }));
  put('tem', team?.body.item?.id);
  const invitation = await step('createInvitation', 'invitation', () => ownerApi.post('/v1/invitations', { email: uniqueEmail('invitee'), role: 'member' }));
  put('inv', invitation?.body.item?.id);
  if (invitation?.body.token) secrets[`${label}.invitationToken`] = invitation.body.token;
  const key = await step('createApiKey', 'API key', () => ownerApi.post('/v1/api-keys', { name: `${label} key` }));
  let ownerKey: string = key?.body.key;
  put('apk', key?.body.item?.id);
  if (!ownerKey) {
    // The API-key routes are not built yet: the row the route would write, so key auth is still exercised.
    ownerKey = randomSecret('cpk');
    const id = newId('apiKey');
    await t.db
      .insertInto('api_keys')
      .values({ id, organization_id: owner.organizationId, member_id: owner.memberId, name: 'k', prefix: ownerKey.slice(0, 12), key_hash: sha256Hex(ownerKey), created_at: t.clock.now(), expires_at: null, last_used_at: null, revoked_at: null })
      .execute();
    put('apk', id);
  }
  secrets[`${label}.ownerApiKey`] = ownerKey;

  // Plugin system: a custom marketplace, a plugin published to it, grants on each, a connector instance.
  const marketplace = await step('createMarketplace', 'marketplace', () => ownerApi.post('/v1/marketplaces', { name: `${label} Market`, description: 'hardening' }));
  const marketplaceId: string | undefined = marketplace?.body.item?.id;
  put('mkt', marketplaceId);
  const component = { input: { rawSourceText: 'name: x', normalizedPayloadJson: { kind: 'skill', name: 'x' }, parserMode: 'yaml', schemaVersion: '1', metadata: {} } };
  const plugin = await step('createPlugin', 'plugin', () =>
    ownerApi.post('/v1/plugins', { name: `${label} Plugin`, description: 'hardening', components: [component], ...(marketplaceId ? { marketplaceId } : {}) }),
  );
  const pluginId: string | undefined = plugin?.body.item?.id;
  put('plg', pluginId);
  if (marketplaceId) {
    const g = await step('grantMarketplaceAccess', 'marketplace grant', () => ownerApi.post(`/v1/marketplaces/${marketplaceId}/access`, { orgMembershipId: target.memberId, role: 'viewer' }));
    put('mag', g?.body.item?.id);
  }
  if (pluginId) {
    const g = await step('grantPluginAccess', 'plugin grant', () => ownerApi.post(`/v1/plugins/${pluginId}/access`, { orgMembershipId: target.memberId, role: 'viewer' }));
    put('pag', g?.body.item?.id);
  }
  const connector = await step('createConnectorInstance', 'connector instance', () => ownerApi.post('/v1/connector-instances', { name: `${label} Connector`, connectorType: 'github' }));
  const connectorId: string | undefined = connector?.body.item?.id;
  put('cin', connectorId);
  if (connectorId) {
    const g = await step('grantConnectorInstanceAccess', 'connector grant', () => ownerApi.post(`/v1/connector-instances/${connectorId}/access`, { orgMembershipId: target.memberId, role: 'viewer' }));
    put('cia', g?.body.item?.id);
  }

  // Connected accounts: a per-member API-key connection the target has a credential on, a shared
  // one holding a key, an OAuth one holding a client secret; the suite's OAuth client.
  const mcpKey = `mcpk_${randomBytes(24).toString('hex')}`;
  const perMember = await step('createMcpConnection', 'MCP connection (per member)', () =>
    ownerApi.post('/v1/mcp-connections', { name: `${label} MCP`, url: 'https://mcp.example.test/mcp', authType: 'apikey', credentialMode: 'per_member', access: { orgWide: true } }),
  );
  const connectionId: string | undefined = perMember?.body.item?.id;
  put('emc', connectionId);
  if (connectionId) {
    const mine = await step('setMyMcpCredential', 'MCP credential', () => as(target.token).put(`/v1/mcp-connections/${connectionId}/my-credential`, { apiKey: mcpKey }));
    if (mine) secrets[`${label}.mcpMemberKey`] = mcpKey;
  }
  const sharedKey = `mcps_${randomBytes(24).toString('hex')}`;
  const shared = await step('createMcpConnection', 'MCP connection (shared)', () =>
    ownerApi.post('/v1/mcp-connections', { name: `${label} MCP shared`, url: 'https://mcp.example.test/shared', authType: 'apikey', credentialMode: 'shared', apiKey: sharedKey, access: { orgWide: true } }),
  );
  if (shared) secrets[`${label}.mcpSharedKey`] = sharedKey;
  const clientSecret = `mcpcs_${randomBytes(24).toString('hex')}`;
  const oauth = await step('createMcpConnection', 'MCP connection (oauth)', () =>
    ownerApi.post('/v1/mcp-connections', {
      name: `${label} MCP oauth`,
      url: 'https://mcp.example.test/oauth',
      authType: 'oauth',
      credentialMode: 'per_member',
      oauthClient: { authorizationUrl: 'https://auth.example.test/authorize', tokenUrl: 'https://auth.example.test/token', clientId: 'client', clientSecret },
      access: { orgWide: true },
    }),
  );
  if (oauth) secrets[`${label}.mcpClientSecret`] = clientSecret;
  const suiteSecret = `suitecs_${randomBytes(24).toString('hex')}`;
  const suite = await step('putSuiteOAuthClient', 'suite OAuth client', () =>
    ownerApi.put('/v1/capabilities/suite-365/oauth-client', { tenantId: 'tenant-1', clientId: 'suite-client', clientSecret: suiteSecret, features: ['chatSend'] }),
  );
  if (suite) secrets[`${label}.suiteClientSecret`] = suiteSecret;

  // Workers and telemetry.
  const worker = await step('createWorker', 'worker', () => ownerApi.post('/v1/workers', { name: `${label} Worker`, runtimeUrl: 'https://runtime.example.test/' }));
  const workerId: string | undefined = worker?.body.item?.id;
  put('wrk', workerId);
  if (worker?.body.hostToken) {
    secrets[`${label}.workerToken`] = worker.body.hostToken;
    await step('reportWorkerActivity', 'worker activity', () =>
      t.http.post(`/v1/workers/${workerId}/activity`).set('x-worker-token', worker.body.hostToken).send({ events: [{ type: 'started', at: t.clock.now().toISOString() }] }),
    );
  }
  await step('ingestTelemetry', 'telemetry', () =>
    ownerApi.post('/v1/telemetry/ingest', { events: [{ type: 'session.started', timestamp: t.clock.now().toISOString(), sessionId: `${label}-s1` }] }),
  );

  const ids: Record<string, string[]> = {};
  for (const prefix of new Set([...Object.keys(primary), ...Object.keys(seen)])) {
    ids[prefix] = [...new Set([...(primary[prefix] ?? []), ...(seen[prefix] ?? [])])];
  }
  return { owner, admin, member, target, ownerKey, ids, secrets, notes };
}

/**
 * Path values for an operation from a world's ids. Parameters whose kind the world does not have
 * (an external chat id, a resource whose route is not built) get a well-formed id that exists
 * nowhere, so the request still reaches the handler.
 */
export function pathValues(op: SpecOperation, world: OrgWorld): Record<string, string> {
  const values: Record<string, string> = {};
  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    const prefix = prefixForParam(op, param);
    const known = prefix ? world.ids[prefix]?.[0] : undefined;
    values[param.name] = known ?? (prefix ? `${prefix}_01h2xcejqtf2nbrexx3vqjhp41` : 'chat-19:hardening@thread.v2');
  }
  return values;
}

export function urlFor(op: SpecOperation, world: OrgWorld, overrides: Record<string, string> = {}): string {
  return fillPath(op.path, { ...pathValues(op, world), ...overrides });
}

/** True when a path parameter names a resource of the organization (so another tenant must get 404). */
export function isTenantScopedParam(op: SpecOperation, param: SpecParameter): boolean {
  const prefix = prefixForParam(op, param);
  return prefix !== null && prefix !== 'org' && prefix !== 'usr';
}
