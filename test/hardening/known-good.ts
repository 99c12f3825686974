import { randomBytes } from 'node:crypto';
import type { TestApp } from '../support/app';
import { fillPath, type SpecOperation } from '../support/spec';
import type { Settings } from '../../src/settings';
import { newId } from '../../src/lib/ids';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { auditRunner } from '../support/audit-jobs';
import { brokerLoan } from '../support/workers-oauth';
import { SoftAuthenticator } from '../support/authenticator';
import { bearer, PASSWORD, signUp, signUpUnverified, uniqueEmail } from '../support/factories';
import { RETURN_ORIGIN } from '../support/sso-signin';
import type { GenRequest } from './generate';
import { pathValues, type OrgWorld } from './world';
import {
  CHAT_ID,
  challengeOf,
  LLM_KEYS,
  mailTokens,
  mcpCallback,
  oidcCallback,
  samlAnswer,
  startFakes,
  suiteCallback,
  totpCode,
  totpUser,
  type Fakes,
  type MailTokens,
} from './known-good-kit';

export interface Known {
  t: TestApp;
  world: OrgWorld;
  /** The platform admin's session (the bootstrap account). */
  root: string;
  fakes: Fakes;
  /** The mail-borne tokens, made once on first use. */
  mail?: Promise<MailTokens>;
}

/** The test app's settings and the fakes the known-good requests call. */
export async function knownGoodSettings(): Promise<{ settings: Partial<Settings>; env: Record<string, string>; fakes: Fakes }> {
  return startFakes();
}

/** POST /v1/bootstrap on the empty platform: the first account, a platform admin. */
export async function bootstrapRoot(t: TestApp): Promise<{ status: number; token: string }> {
  const res = await t.http.post('/v1/bootstrap').send({ email: uniqueEmail('root'), password: PASSWORD, name: 'Root', organizationName: 'Platform' });
  if (res.status !== 201) throw new Error(`bootstrap failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { status: res.status, token: res.body.session.token };
}

const mail = (k: Known) => (k.mail ??= mailTokens(k.t, k.world));

type Hand = (k: Known, op: SpecOperation) => Promise<GenRequest>;

/** The operation's URL in the world (overriding some path values), with a body or query. */
function at(op: SpecOperation, k: Known, extra: Partial<GenRequest> & { path?: Record<string, string> } = {}): GenRequest {
  const { path, ...rest } = extra;
  return { label: 'known good', method: op.method, url: fillPath(op.path, { ...pathValues(op, k.world), ...path }), ...rest };
}
const body = (value: unknown): Hand => async (k, op) => at(op, k, { body: value });
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const unique = (label: string) => `${label} ${randomBytes(3).toString('hex')}`;
const scimUser = () => ({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: unique('known-good-user').replace(' ', '-') });
const scimGroup = () => ({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: unique('Known good group') });

/**
 * One request per operation that a schema-drawn one cannot make succeed: the value must be one
 * the organization has (a role key, a permission, a event type), a secret only a mail, an
 * authenticator or a browser holds, or a state the operation's start step made. Each may take
 * steps first, through the API; its answer is checked like the random ones'.
 */
export const KNOWN_GOOD: Partial<Record<string, Hand>> = {
  // Accounts: tokens from mail, passwords the test knows, second factors from an authenticator.
  previewInvitation: async (k, op) => at(op, k, { query: { token: k.world.secrets[`${k.world.label}.invitationToken`]! } }),
  signIn: async (k, op) => at(op, k, { body: { email: k.world.admin.email, password: PASSWORD } }),
  reauthenticate: body({ password: PASSWORD }),
  verifyEmail: async (k, op) => at(op, k, { body: { token: (await mail(k)).verify } }),
  declineEmailVerification: async (k, op) => at(op, k, { body: { token: (await mail(k)).decline } }),
  resendVerificationEmail: async (k, op) => at(op, k, { headers: as((await signUpUnverified(k.t, 'resending')).token) }),
  confirmPasswordReset: async (k, op) => at(op, k, { body: { token: (await mail(k)).reset, password: 'a brand new passphrase 42' } }),
  changePassword: async (k, op) => at(op, k, { headers: as((await signUp(k.t, 'password')).token), body: { currentPassword: PASSWORD, newPassword: 'a brand new passphrase 42' } }),
  confirmEmailChange: async (k, op) => at(op, k, { body: { token: (await mail(k)).emailChange } }),
  confirmTotpEnrolment: async (k, op) => {
    const user = await signUp(k.t, 'enrol');
    const start = await k.t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
    return at(op, k, { headers: as(user.token), body: { code: totpCode(k.t, start.body.secret) } });
  },
  regenerateRecoveryCodes: async (k, op) => at(op, k, { headers: as((await totpUser(k.t)).token) }),
  registerPasskey: async (k, op) => {
    const user = await signUp(k.t, 'passkey');
    const options = await k.t.http.post('/v1/me/passkeys/options').set(...bearer(user.token));
    const response = new SoftAuthenticator(k.t.settings.publicBaseUrl).create(options.body);
    return at(op, k, { headers: as(user.token), body: { name: 'known good', response } });
  },
  // The target holds a passkey (world.ts), so its password sign-in asks for a second factor.
  getPasskeyRequestOptions: async (k, op) => at(op, k, { body: { challengeToken: await challengeOf(k.t, k.world.target.email) } }),
  verifySecondFactor: async (k, op) => {
    const user = await totpUser(k.t);
    const challengeToken = await challengeOf(k.t, user.email);
    return at(op, k, { body: { challengeToken, method: 'totp', code: totpCode(k.t, user.secret) } });
  },
  removeTotp: async (k, op) => {
    const user = await totpUser(k.t);
    return at(op, k, { headers: as(user.token), body: { code: totpCode(k.t, user.secret) } });
  },
  // Sessions and passkeys are their user's own: the target's, with the target's session.
  revokeMySession: async (k, op) => at(op, k, { headers: as(k.world.target.token) }),
  deletePasskey: async (k, op) => at(op, k, { headers: as(k.world.target.token) }),
  deleteMe: async (k, op) => at(op, k, { headers: as((await signUp(k.t, 'leaving')).token), body: { password: PASSWORD } }),

  // People and roles: values the organization has.
  changeMemberRole: body({ role: 'admin' }),
  transferOwnership: async (k, op) => at(op, k, { path: { memberId: k.world.admin.memberId } }),
  createInvitation: async (k, op) => at(op, k, { body: { email: uniqueEmail('invited'), role: 'member' } }),
  acceptInvitation: async (k, op) => at(op, k, { body: { token: (await mail(k)).invitation, name: 'Accepting', password: PASSWORD } }),
  updateTeam: body({ name: unique('Known good team') }),
  createServiceAccount: async (k, op) => at(op, k, { body: { name: unique('robot'), role: 'member' } }),
  createRole: async (k, op) => at(op, k, { body: { key: `kg-${randomBytes(3).toString('hex')}`, name: unique('role'), permissions: ['members.read'] } }),
  putOAuthPolicy: body({ thirdPartyClients: 'allow', allowList: [], maxScopes: ['members.read'] }),
  // A delegation's keys must be catalogue keys the member holds.
  createWorkerDelegation: body({ scopes: ['members.read'], expiresIn: 600 }),
  // The broker lends only to a worker acting for a member: a delegated token (RFC 8693 exchange at the token endpoint).
  issueMcpAccessToken: async (k, op) => {
    const loan = await brokerLoan(k.t, k.world.owner.token);
    return at(op, k, { path: { connectionId: loan.connectionId }, headers: as(loan.token) });
  },

  // Resources: bodies whose fields must agree with each other or with the resource.
  updateMarketplace: async (k, op) => at(op, k, { body: { name: unique('Market') } }),
  createMcpConnection: async (k, op) => at(op, k, { body: { name: unique('MCP'), url: 'https://mcp.example.test/open', authType: 'none', credentialMode: 'shared', access: { orgWide: true } } }),
  updateLlmProvider: async (k, op) => at(op, k, { body: { name: unique('LLM') } }),
  ingestTelemetry: async (k, op) => at(op, k, { body: { events: [{ type: 'session.started', timestamp: k.t.clock.now().toISOString(), sessionId: 'known-good' }] } }),
  updateWebhook: body({ events: ['member.*'], enabled: true }),
  createAuditStream: async (k, op) => at(op, k, { body: { type: 'splunk_hec', config: { url: 'https://splunk.example.test/services/collector/event', token: 'known-good-token' } } }),
  updateAuditStream: body({ enabled: false }),
  createSsoConnection: async (k, op) => at(op, k, { body: { type: 'oidc', name: unique('OIDC'), issuer: 'https://login.example.test/v2.0', clientId: 'client', clientSecret: 'known-good-secret' } }),
  updateSsoConnection: async (k, op) => at(op, k, { body: { name: unique('OIDC') } }),
  createSsoDomain: async (k, op) => at(op, k, { body: { domain: `kg-${randomBytes(3).toString('hex')}.example.com` } }),
  revokeOAuthAuthorization: async (k, op) => {
    const now = k.t.clock.now();
    const id = newId('oauthAuthorization');
    await insertAuthorization(
      k.t.db,
      { id, organizationId: k.world.owner.organizationId, memberId: k.world.owner.memberId, clientId: 'https://agent.example.test/kg.json', clientType: 'metadata_document', clientName: 'known good', scopes: ['members.read'], resource: `${k.t.settings.publicBaseUrl}/v1`, grantKey: null, expiresAt: new Date(now.getTime() + 86_400_000) },
      now,
    );
    return at(op, k, { path: { authorizationId: id } });
  },
  verifyAuditCheckpoint: async (k, op) => {
    const runner = auditRunner(k.t);
    await runner.runOnce();
    await runner.stop();
    const list = await k.t.http.get('/v1/audit-logs/checkpoints').set(...bearer(k.world.owner.token));
    return at(op, k, { body: { checkpoint: list.body.items[0].note } });
  },

  // Calls to other systems: the local fakes.
  getWorkerRuntime: async (k, op) => {
    await k.t.http.patch(at(op, k).url.replace(/\/runtime$/, '')).set(...bearer(k.world.owner.token)).send({ runtimeUrl: `${k.fakes.runtime.url}/` });
    return at(op, k);
  },
  testLlmProvider: async (k, op) => {
    await k.t.http.patch(at(op, k).url.replace(/\/test$/, '')).set(...bearer(k.world.owner.token)).send({ baseUrl: `${k.fakes.llm.url}/openai/v1`, apiKey: LLM_KEYS.openai });
    return at(op, k);
  },
  verifySsoDomain: async (k, op) => {
    const domain = `kg-${randomBytes(3).toString('hex')}.example.com`;
    const created = await k.t.http.post('/v1/sso/domains').set(...bearer(k.world.owner.token)).send({ domain });
    const { name, value } = created.body.item.verification;
    k.fakes.dns.setTxt(name, [value]);
    return at(op, k, { path: { domainId: created.body.item.id } });
  },
  completeMcpOAuth: async (k, op) => ({ ...at(op, k), url: (await mcpCallback(k.t, k.world, k.fakes)).callback }),
  startMcpConnect: async (k, op) => at(op, k, { path: { connectionId: (await mcpCallback(k.t, k.world, k.fakes)).connectionId } }),
  disconnectMyMcpAccount: async (k, op) => {
    const { connectionId, callback } = await mcpCallback(k.t, k.world, k.fakes);
    await k.t.http.get(callback);
    return at(op, k, { path: { connectionId } });
  },
  completeSuiteOAuth: async (k, op) => ({ ...at(op, k), url: await suiteCallback(k.t, k.world) }),
  sendSuiteChatMessage: async (k, op) => {
    await k.t.http.get(await suiteCallback(k.t, k.world));
    return at(op, k, { path: { chatId: CHAT_ID }, body: { content: 'known good' } });
  },

  // Single sign-on: the SAML and OIDC fakes answer a started sign-in as a browser would carry it.
  getSsoSamlMetadata: async (k, op) => at(op, k, { path: { connectionId: k.world.ids.ssc![1]! } }),
  startSso: async (k, op) => at(op, k, { body: { connectionId: k.world.ids.ssc![1]! } }),
  completeSsoSaml: async (k, op) => ({ ...at(op, k), raw: { contentType: 'application/x-www-form-urlencoded', data: new URLSearchParams((await samlAnswer(k.t, k.world, k.fakes)).form).toString() } }),
  exchangeSsoCode: async (k, op) => {
    const { form, verifier } = await samlAnswer(k.t, k.world, k.fakes, `${RETURN_ORIGIN}/known-good`);
    const acs = await k.t.http.post('/v1/auth/sso/saml/acs').type('form').send(form);
    return at(op, k, { body: { code: new URL(acs.headers.location!).searchParams.get('code'), verifier } });
  },
  completeSsoOidc: async (k, op) => ({ ...at(op, k), url: await oidcCallback(k.t, k.world, k.fakes) }),

  // SCIM: the protocol's bodies (the contract leaves them untyped).
  scimCreateUser: body(scimUser()),
  scimReplaceUser: body({ ...scimUser(), active: true }),
  scimPatchUser: body({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: true }] }),
  scimCreateGroup: body(scimGroup()),
  scimReplaceGroup: body(scimGroup()),
  scimPatchGroup: body({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'displayName', value: unique('Renamed group') }] }),
  // The world's group is a team, which deleteTeam removed before the directory's deletions ran.
  scimDeleteGroup: async (k, op) => {
    const created = await k.t.http.post('/scim/v2/Groups').set(...bearer(k.world.scimToken)).send(scimGroup());
    return at(op, k, { path: { groupId: created.body.id } });
  },
  scimGetResourceType: async (k, op) => at(op, k, { path: { name: 'User' } }),
  scimGetSchema: async (k, op) => at(op, k, { path: { schemaId: 'urn:ietf:params:scim:schemas:core:2.0:User' } }),
};

