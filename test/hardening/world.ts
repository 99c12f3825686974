import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { newId } from '../../src/lib/ids';
import { randomSecret, SecretBox, sha256Hex } from '../../src/lib/crypto';
import type { TestApp } from '../support/app';
import { IDP_CERTIFICATE } from '../support/sso';
import { SoftAuthenticator } from '../support/authenticator';
import { addMember, bearer, createOrganization, PASSWORD, uniqueEmail, type OrgMember, type OrgOwner } from '../support/factories';
import { fillPath, idKindOf, specOperations, type SpecOperation, type SpecParameter } from '../support/spec';
import { invitationTokenFor } from '../support/mailbox';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import pino from 'pino';
import { JobRunner } from '../../src/jobs';
import { OrganizationExports } from '../../src/exports/job';

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
  /** A SCIM token of the organization (the credential of the /scim/v2 routes). */
  scimToken: string;
  /** Ids by TypeID prefix ('mkt', 'mag', 'wrk', ...), the most specific first. */
  ids: Record<string, string[]>;
  /** Every secret handed out while building the world, labelled (for the plain-text scans). */
  secrets: Record<string, string>;
  /** Steps that could not run (route not built yet, or refused), for the report. */
  notes: string[];
  /** The organization's label ('A', 'B', ...), for messages. */
  label: string;
}

const TYPEID = /^([a-z]+)_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/**
 * Which kind of id a path parameter takes, from the spec alone (its schema's TypeID pattern or
 * `x-id-prefix`; 'external' for `x-external-id: true`); null when the spec does not say.
 */
export function prefixForParam(_op: SpecOperation, param: SpecParameter): string | 'external' | null {
  return idKindOf(param.schema);
}

/** A generated suite met an operation it cannot exercise; the message says what to add. */
export class CannotExercise extends Error {}

const opLabel = (op: SpecOperation) => `${op.method.toUpperCase()} ${op.path} (${op.operationId})`;

/** What a spec property or parameter must say for the generated suites to know what it names. */
export function missingIdKind(op: SpecOperation, where: string, example: string): string {
  return [
    `${where} of ${opLabel(op)} does not say which kind of id it takes, so the generated hardening suites cannot`,
    `point it at a real resource. In the spec, give its schema a TypeID pattern (\`pattern: ^${example}_.*\`, like the`,
    `schemas in openapi/components/ids.yaml) or, for an id the contract keeps as a plain string, \`x-id-prefix: ${example}\``,
    `(like PluginId there). An id of another system (not ours) gets \`x-external-id: true\`.`,
  ].join('\n    ');
}

/** What buildWorld must create for the generated suites to have a real `prefix` id. */
export function missingWorldId(op: SpecOperation, where: string, prefix: string, world: OrgWorld, paramName?: string): string {
  // The operation that creates it is most likely a POST on the collection the parameter is in.
  const collection = paramName ? op.path.slice(0, op.path.indexOf(`/{${paramName}}`)) : null;
  const creator = collection ? specOperations().find((o) => o.method === 'post' && o.path === collection) : undefined;
  const call = creator
    ? `const made = await step('${creator.operationId}', '<what it is>', () => ownerApi.post(\`${creator.path.replace(/\{(\w+)\}/g, '${<$1 from above>}')}\`, { ...a valid body }));`
    : `const made = await step('<the operation that creates it>', '<what it is>', () => ownerApi.post('<its path>', { ...a valid body }));`;
  return [
    `${where} of ${opLabel(op)} takes a "${prefix}_" id, and the hardening world of organization ${world.label} has none,`,
    `so the generated suites would only ever send an id that exists nowhere (a 404 that proves nothing).`,
    `Create one in buildWorld (test/hardening/world.ts) through the API, next to the other resources:`,
    `    ${call}`,
    `    put('${prefix}', made?.body.item?.id);`,
    ...(world.notes.length ? [`Steps of buildWorld that did not run: ${world.notes.join('; ')}`] : []),
  ].join('\n    ');
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
  const built = (operationId: string) => available.has(operationId);
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
  const inviteeEmail = uniqueEmail('invitee');
  const invitation = await step('createInvitation', 'invitation', () => ownerApi.post('/v1/invitations', { email: inviteeEmail, role: 'member' }));
  put('inv', invitation?.body.item?.id);
  // The token only ever reaches the invitee's mailbox; the suites check it never leaks elsewhere.
  if (invitation) secrets[`${label}.invitationToken`] = await invitationTokenFor(t, inviteeEmail);
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
  // A service account (a member with no user) with a client secret.
  const serviceAccount = await step('createServiceAccount', 'service account', () => ownerApi.post('/v1/service-accounts', { name: `${label} robot`, role: 'member' }));
  const serviceAccountId: string | undefined = serviceAccount?.body.item?.id;
  put('svc', serviceAccountId);
  if (serviceAccountId) {
    const secret = await step('createServiceAccountSecret', 'service-account secret', () => ownerApi.post(`/v1/service-accounts/${serviceAccountId}/secrets`, {}));
    put('sas', secret?.body.item?.id);
    if (secret) secrets[`${label}.serviceAccountSecret`] = secret.body.clientSecret;
    const saKey = await step('createServiceAccountApiKey', 'service-account API key', () => ownerApi.post(`/v1/service-accounts/${serviceAccountId}/api-keys`, { name: `${label} robot key` }));
    if (saKey) secrets[`${label}.serviceAccountApiKey`] = saKey.body.key;
  }

  // An organization OAuth client (confidential: it holds a secret the scans look for).
  const oauthClient = await step('createOAuthClient', 'OAuth client', () =>
    ownerApi.post('/v1/oauth-clients', { name: `${label} app`, type: 'confidential', redirectUris: ['https://app.example.test/cb'], scopes: ['teams.read'] }),
  );
  put('oac', oauthClient?.body.item?.id);
  if (oauthClient) secrets[`${label}.oauthClientSecret`] = oauthClient.body.clientSecret;

  // SCIM: a token (the plan needs the scim feature), used once so its last-used time is recorded now.
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const scim = await step('createScimToken', 'SCIM token', () => ownerApi.post('/v1/scim/tokens', { name: `${label} IdP` }));
  const scimToken: string = scim?.body.token ?? '';
  put('sct', scim?.body.item?.id);
  if (scimToken) {
    secrets[`${label}.scimToken`] = scimToken;
    await t.http.get('/scim/v2/ServiceProviderConfig').set('authorization', `Bearer ${scimToken}`);
    // A directory user (a SCIM User; not an address, so it stays unlinked and takes no seat).
    const user = await step('scimCreateUser', 'SCIM User', () =>
      t.http.post('/scim/v2/Users').set('authorization', `Bearer ${scimToken}`).send({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `${label}-directory-user` }),
    );
    put('dus', user?.body.id);
  }
  // Roles: a custom role (held by nobody, so it can be changed and deleted).
  const role = await step('createRole', 'custom role', () => ownerApi.post('/v1/roles', { key: 'hardening-role', name: `${label} role`, permissions: ['members.read'] }));
  put('rol', role?.body.item?.id);

  // SSO (the plan is enterprise above): an OIDC connection holding a client secret, a SAML one, a
  // claimed domain (pending: verification needs DNS).
  const ssoSecret = `ssocs_${randomBytes(24).toString('hex')}`;
  const oidc = await step('createSsoConnection', 'SSO connection (oidc)', () =>
    ownerApi.post('/v1/sso/connections', { type: 'oidc', name: `${label} OIDC`, issuer: 'https://login.example.test/v2.0', clientId: 'client', clientSecret: ssoSecret }),
  );
  put('ssc', oidc?.body.item?.id);
  if (oidc) secrets[`${label}.ssoClientSecret`] = ssoSecret;
  const saml = await step('createSsoConnection', 'SSO connection (saml)', () =>
    ownerApi.post('/v1/sso/connections', { type: 'saml', name: `${label} SAML`, idpEntityId: 'https://idp.example.test/', idpSsoUrl: 'https://idp.example.test/sso', idpCertificate: IDP_CERTIFICATE }),
  );
  put('ssc', saml?.body.item?.id);
  const domain = await step('createSsoDomain', 'SSO domain', () => ownerApi.post('/v1/sso/domains', { domain: `${label.toLowerCase()}-${randomBytes(3).toString('hex')}.example.com` }));
  put('dom', domain?.body.item?.id);

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

  // Organization resources: a template.
  const template = await step('createTemplate', 'template', () => ownerApi.post('/v1/templates', { name: `${label} Template`, kind: 'worker', content: { image: 'node:20' } }));
  put('tpl', template?.body.item?.id);
  // An LLM provider holding a key, which the target may use (viewer).
  const llmKey = `sk-hardening-${randomBytes(24).toString('hex')}`;
  const llm = await step('createLlmProvider', 'LLM provider', () =>
    ownerApi.post('/v1/llm-providers', { name: `${label} LLM`, provider: 'openai', apiKey: llmKey, models: ['gpt-4o'], defaultModel: 'gpt-4o' }),
  );
  const llmId: string | undefined = llm?.body.item?.id;
  put('llp', llmId);
  if (llm) secrets[`${label}.llmProviderKey`] = llmKey;
  if (llmId) {
    const g = await step('grantLlmProviderAccess', 'LLM provider grant', () => ownerApi.post(`/v1/llm-providers/${llmId}/access`, { orgMembershipId: target.memberId, role: 'viewer' }));
    put('lpg', g?.body.item?.id);
  }

  // Workers and telemetry.
  const worker = await step('createWorker', 'worker', () => ownerApi.post('/v1/workers', { name: `${label} Worker`, runtimeUrl: 'https://runtime.example.test/' }));
  const workerId: string | undefined = worker?.body.item?.id;
  put('wrk', workerId);
  if (worker?.body.hostToken) {
    secrets[`${label}.workerToken`] = worker.body.hostToken;
    await step('reportWorkerActivity', 'worker activity', () =>
      t.http.post(`/v1/workers/${workerId}/activity`).set('x-worker-token', worker.body.hostToken).send({ events: [{ type: 'started', at: t.clock.now().toISOString() }] }),
    );
    await step('workerHeartbeat', 'worker heartbeat', () =>
      t.http.post(`/v1/workers/${workerId}/heartbeat`).set('x-worker-token', worker.body.hostToken).send({ version: '1.0.0', openSessions: 1 }),
    );
  }
  await step('ingestTelemetry', 'telemetry', () =>
    ownerApi.post('/v1/telemetry/ingest', { events: [{ type: 'session.started', timestamp: t.clock.now().toISOString(), sessionId: `${label}-s1` }] }),
  );

  // Webhooks: an endpoint (its secret is scanned for) and a queued test delivery.
  const webhook = await step('createWebhook', 'webhook', () => ownerApi.post('/v1/webhooks', { url: 'https://hooks.example.test/in', events: ['*'] }));
  const webhookId: string | undefined = webhook?.body.item?.id;
  put('whk', webhookId);
  if (webhook?.body.secret) secrets[`${label}.webhookSecret`] = webhook.body.secret;
  if (webhookId) {
    const test = await step('testWebhook', 'webhook test', () => ownerApi.post(`/v1/webhooks/${webhookId}/test`));
    put('whd', test?.body.deliveryId);
    put('evt', test?.body.eventId);
  }

  // An audit stream (the plan is enterprise above) holding a Splunk token, scanned for.
  const hecToken = `hec-${label}-${'9'.repeat(24)}`;
  const stream = await step('createAuditStream', 'audit stream', () =>
    ownerApi.post('/v1/audit-streams', { type: 'splunk_hec', config: { url: 'https://splunk.example.test/services/collector/event', token: hecToken } }),
  );
  put('ast', stream?.body.item?.id);
  if (stream?.body.item?.id) secrets[`${label}.hecToken`] = hecToken;

  // A spare session of the target member: sessions belong to a user, so another user's id is not found.
  // Made before the target holds a passkey (a sign-in then asks for it).
  const spare = await step('signIn', 'spare session', () => t.http.post('/v1/auth/sign-in').send({ email: target.email, password: PASSWORD }));
  const spareToken: string | undefined = spare?.body.session?.token;
  if (spareToken) {
    secrets[`${label}.spareSession`] = spareToken;
    const sessions = await step('listMySessions', 'sessions', () => as(spareToken).get('/v1/me/sessions'));
    put('ses', sessions?.body.items?.find((s: { id: string; current: boolean }) => s.current)?.id);
  }

  // A passkey of the target member: passkeys belong to a user, so another user's id is not found.
  const passkeyOptions = await step('getPasskeyCreationOptions', 'passkey options', () => as(target.token).post('/v1/me/passkeys/options'));
  if (passkeyOptions?.status === 200) {
    const response = new SoftAuthenticator(t.settings.publicBaseUrl).create(passkeyOptions.body);
    const passkey = await step('registerPasskey', 'passkey', () => as(target.token).post('/v1/me/passkeys', { name: `${label} passkey`, response }));
    put('pky', passkey?.body.item?.id);
  }

  // The owner's authorization of an OAuth client: made by the consent step of the authorization
  // server, which no /v1 route drives, so written by the same store function consent uses.
  {
    const now = t.clock.now();
    const authorization = await insertAuthorization(
      t.db,
      {
        id: newId('oauthAuthorization'),
        organizationId: owner.organizationId,
        memberId: owner.memberId,
        clientId: 'https://agent.example.test/client.json',
        clientType: 'metadata_document',
        clientName: `${label} agent`,
        scopes: ['members.read'],
        resource: `${t.settings.publicBaseUrl}/v1`,
        grantKey: null,
        expiresAt: new Date(now.getTime() + 30 * 86_400_000),
      },
      now,
    );
    put('oag', authorization.id);
  }

  // A ready export of the organization: requested through the API, built by the export job.
  const exported = await step('createOrgExport', 'export', () => ownerApi.post('/v1/org/exports'));
  if (exported?.status === 202) {
    const kind = new OrganizationExports({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), publicBaseUrl: t.settings.publicBaseUrl, settings: t.settings });
    const runner = new JobRunner({ clock: t.clock, logger: pino({ level: 'silent' }), kinds: [kind] });
    await runner.runOnce();
    await runner.stop();
    put('exp', exported.body.item?.id);
  }

  const ids: Record<string, string[]> = {};
  for (const prefix of new Set([...Object.keys(primary), ...Object.keys(seen)])) {
    ids[prefix] = [...new Set([...(primary[prefix] ?? []), ...(seen[prefix] ?? [])])];
  }
  return { owner, admin, member, target, ownerKey, scimToken, ids, secrets, notes, label };
}

/** External ids (another system's) get this value: well-formed for their schema, ours nowhere. */
const EXTERNAL_ID = 'chat-19:hardening@thread.v2';

/**
 * Why the generated suites cannot exercise an operation against this world: a path parameter
 * whose kind of id the spec does not say, or a kind the world has no real id of. Empty when
 * every path parameter resolves to an id that exists in the world's organization.
 */
export function unexercisable(op: SpecOperation, world: OrgWorld): string[] {
  const problems: string[] = [];
  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    const kind = prefixForParam(op, param);
    if (kind === null) problems.push(missingIdKind(op, `path parameter "${param.name}"`, 'xyz'));
    else if (kind !== 'external' && !world.ids[kind]?.length) problems.push(missingWorldId(op, `path parameter "${param.name}"`, kind, world, param.name));
  }
  return problems;
}

/**
 * Path values for an operation from a world's ids: for each parameter a real id of the kind the
 * spec names. Throws CannotExercise (failing the test that asked) when there is none, rather than
 * inventing an id that exists nowhere: a generated test must not pass without exercising anything.
 */
export function pathValues(op: SpecOperation, world: OrgWorld): Record<string, string> {
  const problems = unexercisable(op, world);
  if (problems.length) throw new CannotExercise(`${opLabel(op)} cannot be exercised by the generated hardening suites:\n  - ${problems.join('\n  - ')}`);
  const values: Record<string, string> = {};
  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    const kind = prefixForParam(op, param)!;
    values[param.name] = kind === 'external' ? EXTERNAL_ID : world.ids[kind]![0]!;
  }
  return values;
}

export function urlFor(op: SpecOperation, world: OrgWorld, overrides: Record<string, string> = {}): string {
  return fillPath(op.path, { ...pathValues(op, world), ...overrides });
}

/** True when a path parameter names a resource of the organization (so another tenant must get 404). */
export function isTenantScopedParam(op: SpecOperation, param: SpecParameter): boolean {
  const prefix = prefixForParam(op, param);
  return prefix !== 'external' && prefix !== 'org' && prefix !== 'usr';
}
