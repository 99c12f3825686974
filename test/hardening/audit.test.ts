import { existsSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { Response } from 'supertest';
import { createTestApp, type TestApp } from '../support/app';
import { specOperations, type SpecOperation } from '../support/spec';
import { addMember, bearer, createOrganization, PASSWORD, signUp, uniqueEmail } from '../support/factories';
import { findSecretsInDatabase, snapshot, snapshotDiff } from '../support/snapshot';
import { badRequests, ownerCredential, send, validRequests, type GenRequest } from './generate';
import { buildWorld, pathValues, urlFor, type OrgWorld } from './world';
import { NAMEID_PERSISTENT, SamlTestIdp, skipRequestSchemaValidation } from '../fakes/saml-idp';
import { samlSpFor } from '../../src/sso/saml';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { invitationTokenFor } from '../support/mailbox';
import { newId } from '../../src/lib/ids';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { brokerLoan } from '../support/workers-oauth';

let dns: TestDnsServer | undefined;

/**
 * Every mutating operation of the contract (POST, PUT, PATCH, DELETE) writes exactly one audit
 * entry with a sensible action and target when it succeeds, and none when it fails: for invalid
 * requests (4xx), and when the database fails at commit (a deferred trigger raises, so the change
 * and its entry roll back together, and no table differs afterwards).
 *
 * Generated from the spec: a new operation is walked without anyone listing it. When the test
 * cannot make an operation succeed it fails and says so: add a request to REQUESTS below (or a
 * world entry in world.ts), or, if the operation changes no organization data, an EXEMPT reason.
 */
const EXEMPT: Record<string, string> = {
  signUp: 'creates a user, who belongs to no organization yet',
  adminRotateOAuthKeys: "rotates the platform's OAuth signing keys, which belong to no organization (no organization's audit log is the place for it)",
  ingestTelemetry: 'telemetry is usage data, not a change to the organization (see docs/audit.md)',
  reportWorkerActivity: "worker activity is usage data reported by the worker host, not a change to the organization",
  startMcpConnect: 'starts an OAuth flow (a short-lived state row); the callback that connects the account is audited',
  startSuiteConnect: 'starts an OAuth flow (a short-lived state row); the callback that connects the account is audited',
  sendSuiteChatMessage: 'posts a message to the external suite; nothing of the organization changes',
  testLlmProvider: "reads the provider's model list with the stored key; nothing of the organization changes",
  workerHeartbeat: 'a heartbeat is usage reported by the worker host (metered into online intervals), not a change to the organization',
  reauthenticate: "renews the session's authentication time; nothing of the organization changes",
  startSso: 'starts an SSO sign-in (a short-lived login state row); the callback that signs in is audited',
  exchangeSsoCode: 'turns the one-time code of a completed SSO sign-in (audited by its callback) into its session',
  // Second factors are the user's, not an organization's: a pending enrolment or a WebAuthn
  // challenge changes nothing of an organization; confirming, removing and regenerating factors,
  // the two-step sign-in and the policy need a live authenticator (a TOTP code, a passkey) that a
  // generated request cannot hold, and test/api/mfa.test.ts checks their audit entries.
  startTotpEnrolment: 'stores a pending authenticator-app secret of the user; nothing of the organization changes until it is confirmed',
  getPasskeyCreationOptions: "stores the user's pending WebAuthn challenge; nothing of the organization changes",
  getPasskeyRequestOptions: "stores the WebAuthn challenge of a sign-in in progress; nothing of the organization changes",
  confirmTotpEnrolment: 'needs the current code of an authenticator app (audited as member.mfa_enrolled, test/api/mfa.test.ts)',
  removeTotp: 'needs the current code of an authenticator app (audited as member.mfa_removed, test/api/mfa.test.ts)',
  regenerateRecoveryCodes: 'needs a second factor enrolled with an authenticator (audited as member.mfa_regenerated, test/api/mfa.test.ts)',
  registerPasskey: 'needs a WebAuthn authenticator\'s signed answer (audited as member.mfa_enrolled, test/api/mfa.test.ts)',
  deletePasskey: 'needs a registered passkey of the caller (audited as member.mfa_removed, test/api/mfa.test.ts)',
  verifySecondFactor: 'needs a sign-in challenge and a live second factor (audited as member.signed_in, test/api/mfa.test.ts)',
  putAuthPolicy: 'the caller must hold a second factor, which a generated world cannot (audited as organization.auth_policy_updated, test/api/mfa.test.ts)',
  // Accounts (docs/accounts.md): the user's address and password, not an organization's
  // data; the links' tokens reach only the mailbox, so test/api/verify-email.test.ts and
  // test/api/password-reset.test.ts follow them and check the entries in each organization.
  verifyEmail: 'needs the link token only the verification message carries (audited as member.email_verified or member.account_secured, test/api/verify-email.test.ts, test/api/pre-hijacking.test.ts)',
  declineEmailVerification: 'needs the link token only the verification message carries; the unverified account it deletes belongs to no organization under the default EMAIL_VERIFICATION (test/api/pre-hijacking.test.ts)',
  resendVerificationEmail: "queues a new verification message to the user's address; nothing of the organization changes",
  requestPasswordReset: 'queues a reset message (or none, for an unknown address); nothing of the organization changes',
  confirmPasswordReset: 'needs the link token only the reset message carries (audited as member.password_reset, test/api/password-reset.test.ts)',
  changePassword: "ends the caller's other sessions, which the walk's world signs in with (audited as member.password_changed, test/api/password-reset.test.ts)",
  requestEmailChange: 'stores a pending link and queues its messages; the address changes (audited as member.email_changed) only when the link is followed',
  confirmEmailChange: 'needs the link mailed to the new address (audited as member.email_changed, test/api/email-change.test.ts)',
  verifyAuditCheckpoint: 'checks the log against a checkpoint the caller holds; nothing changes',
};

/** `ids`: what the entry may name besides the request and its answer (a change to the caller's own account names their member). */
type Prepared = { req: GenRequest; auth?: Record<string, string>; ids?: string[] };
type Builder = (t: TestApp, world: OrgWorld, op: SpecOperation) => Promise<Prepared>;

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

/** Requests for operations a generated body cannot make succeed. */
const REQUESTS: Record<string, Builder> = {
  signIn: async (_t, w, op) => ({ req: { label: 'owner signs in', method: op.method, url: op.path, body: { email: w.owner.email, password: PASSWORD } } }),
  signOut: async (t, w, op) => {
    const again = await t.http.post('/v1/auth/sign-in').send({ email: w.owner.email, password: PASSWORD });
    return { req: { label: 'a second session signs out', method: op.method, url: op.path }, auth: auth(again.body.session.token) };
  },
  createOrg: async (t, _w, op) => {
    const user = await signUp(t, 'founder');
    return { req: { label: 'a new user creates an organization', method: op.method, url: op.path, body: { name: 'Audited Org' } }, auth: auth(user.token) };
  },
  acceptInvitation: async (t, w, op) => {
    const user = await signUp(t, 'invitee');
    await t.http.post('/v1/invitations').set(...bearer(w.owner.token)).send({ email: user.email, role: 'member' });
    return { req: { label: 'the invitee accepts', method: op.method, url: op.path, body: { token: await invitationTokenFor(t, user.email) } }, auth: auth(user.token) };
  },
  removeMember: async (t, w, op) => {
    const leaving = await addMember(t, w.owner.organizationId, 'member');
    return { req: { label: 'an admin removes a member', method: op.method, url: urlFor(op, w, { memberId: leaving.memberId }) } };
  },
  createInvitation: async (_t, _w, op) => ({ req: { label: 'invite a member', method: op.method, url: op.path, body: { email: uniqueEmail('audited-invitee'), role: 'member' } } }),
  createRole: async (_t, _w, op) => ({
    req: { label: 'a custom role', method: op.method, url: op.path, body: { key: `auditor-${Date.now().toString(36)}`, name: 'Auditor', permissions: ['audit.read'] } },
  }),
  createWorkerDelegation: async (t, w, op) => {
    // The service's signing key is made on first use (docs/oauth.md#signing-keys), not by this change: have it before.
    await t.http.get('/.well-known/oauth-authorization-server');
    return { req: { label: 'the owner delegates to a worker', method: op.method, url: urlFor(op, w), body: { scopes: ['members.read'], expiresIn: 600 } } };
  },
  // The broker lends only to a worker acting for a member (docs/workers-and-usage.md#the-credential-broker).
  issueMcpAccessToken: async (t, w, op) => {
    const loan = await brokerLoan(t, w.owner.token);
    return { req: { label: 'a worker borrows for the owner', method: op.method, url: urlFor(op, w, { connectionId: loan.connectionId }) }, auth: auth(loan.token) };
  },
  changeMemberRole: async (_t, w, op) => ({ req: { label: 'make the target an admin', method: op.method, url: urlFor(op, w), body: { role: 'admin' } } }),
  setActiveOrganization: async (_t, w, op) => ({ req: { label: 'switch to the world organization', method: op.method, url: op.path, body: { organizationId: w.owner.organizationId } } }),
  grantMarketplaceAccess: grantBody,
  grantPluginAccess: grantBody,
  grantConnectorInstanceAccess: grantBody,
  grantLlmProviderAccess: grantBody,
  createLlmProvider: async (t, w, op) => {
    // The world's free plan holds its one provider already: give the organization room for another.
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', w.owner.organizationId).execute();
    return { req: { label: 'an admin adds a provider', method: op.method, url: op.path, body: { name: 'Audited LLM', provider: 'anthropic', apiKey: 'sk-ant-audited-0123456789' } } };
  },
  // A stream's config is checked per type, which a generated body rarely matches.
  createAuditStream: async (t, w, op) => {
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', w.owner.organizationId).execute();
    return { req: { label: 'stream to a SIEM', method: op.method, url: op.path, body: { type: 'datadog', config: { site: 'datadoghq.eu', apiKey: 'dd-audited-0123456789' } } } };
  },
  updateAuditStream: async (_t, w, op) => ({
    req: { label: 'a new HEC token', method: op.method, url: urlFor(op, w), body: { config: { url: 'https://splunk.example.test/services/collector/event', token: 'hec-rotated-0123456789' } } },
  }),
  updateLlmProvider: async (_t, w, op) => ({ req: { label: 'rename the provider', method: op.method, url: urlFor(op, w), body: { name: 'Renamed LLM' } } }),
  setLlmProviderKey: async (_t, w, op) => ({ req: { label: 'rotate the key', method: op.method, url: urlFor(op, w), body: { apiKey: 'sk-rotated-0123456789' } } }),
  addMarketplacePlugin: async (t, w, op) => {
    const plugin = await t.http.post('/v1/plugins').set(...bearer(w.owner.token)).send({ name: `Listed ${uniqueEmail('p')}` });
    return { req: { label: 'publish a plugin', method: op.method, url: urlFor(op, w), body: { pluginId: plugin.body.item.id } } };
  },
  removeMarketplacePlugin: async (t, w, op) => {
    const plugin = await t.http.post('/v1/plugins').set(...bearer(w.owner.token)).send({ name: `Unlisted ${uniqueEmail('p')}`, marketplaceId: w.ids.mkt![0] });
    return { req: { label: 'unpublish a plugin', method: op.method, url: urlFor(op, w, { pluginId: plugin.body.item.id }) } };
  },
  revokeApiKey: async (t, w, op) => {
    const key = await t.http.post('/v1/api-keys').set(...bearer(w.owner.token)).send({ name: 'to revoke' });
    return { req: { label: 'revoke a fresh key', method: op.method, url: urlFor(op, w, { apiKeyId: key.body.item.id }) } };
  },
  putOAuthPolicy: async (_t, _w, op) => ({
    req: { label: 'admit listed outside clients', method: op.method, url: op.path, body: { thirdPartyClients: 'allowList', allowList: ['https://agent.example.test/client.json'], maxScopes: ['members.read'] } },
  }),
  // Authorizations are made by consent at the authorization server: a fresh one of the owner each.
  revokeMyAuthorization: async (t, w, op) => ({ req: { label: 'the owner revokes an authorization', method: op.method, url: urlFor(op, w, { authorizationId: await freshAuthorization(t, w) }) } }),
  revokeOAuthAuthorization: async (t, w, op) => ({ req: { label: 'an admin revokes an authorization', method: op.method, url: urlFor(op, w, { authorizationId: await freshAuthorization(t, w) }) } }),
  createServiceAccount: async (_t, _w, op) => ({ req: { label: 'an integration', method: op.method, url: op.path, body: { name: 'Audited robot', role: 'member' } } }),
  createServiceAccountSecret: async (_t, w, op) => ({ req: { label: 'a client secret', method: op.method, url: urlFor(op, w), body: {} } }),
  deleteServiceAccount: fresh('/v1/service-accounts', { name: 'Doomed robot', role: 'member' }, 'serviceAccountId'),
  deleteServiceAccountSecret: async (t, w, op) => {
    const secret = await t.http.post(`/v1/service-accounts/${w.ids.svc![0]}/secrets`).set(...bearer(w.owner.token)).send({});
    if (secret.status !== 201) throw new Error(`secret for ${op.operationId}: ${secret.status} ${JSON.stringify(secret.body)}`);
    return { req: { label: 'delete a fresh secret', method: op.method, url: urlFor(op, w, { secretId: secret.body.item.id }) } };
  },
  deleteOAuthClient: fresh('/v1/oauth-clients', { name: 'Doomed app', type: 'public', redirectUris: ['http://127.0.0.1/cb'], scopes: ['teams.read'] }, 'oauthClientId'),
  createMcpConnection: async (_t, w, op) => ({
    req: {
      label: 'a shared connection with a key',
      method: op.method,
      url: op.path,
      body: { name: 'Audited MCP', url: 'https://mcp.example.test/audited', authType: 'apikey', credentialMode: 'shared', apiKey: 'mcp-key-0123456789abcdef', access: { orgWide: true } },
    },
  }),
  disconnectMyMcpAccount: async (_t, w, op) => ({ req: { label: 'the target disconnects', method: op.method, url: urlFor(op, w) }, auth: auth(w.target.token) }),
  cancelInvitation: async (t, w, op) => {
    const invited = await t.http.post('/v1/invitations').set(...bearer(w.owner.token)).send({ email: uniqueEmail('cancelled'), role: 'member' });
    return { req: { label: 'cancel a fresh invitation', method: op.method, url: urlFor(op, w, { invitationId: invited.body.item.id }) } };
  },
  deleteTeam: fresh('/v1/teams', { name: 'Doomed team' }, 'teamId'),
  deleteMarketplace: fresh('/v1/marketplaces', { name: 'Doomed market' }, 'marketplaceId'),
  archiveMarketplace: fresh('/v1/marketplaces', { name: 'Archived market' }, 'marketplaceId'),
  archivePlugin: fresh('/v1/plugins', { name: 'Archived plugin' }, 'pluginId'),
  deleteConnectorInstance: fresh('/v1/connector-instances', { name: 'Doomed connector', connectorType: 'github' }, 'connectorInstanceId'),
  deleteMcpConnection: fresh('/v1/mcp-connections', { name: 'Doomed MCP', url: 'https://mcp.example.test/doomed', authType: 'none', credentialMode: 'shared', access: { orgWide: true } }, 'connectionId'),
  deleteWorker: fresh('/v1/workers', { name: 'Doomed worker' }, 'id'),
  // SCIM: bodies an identity provider sends (the generated ones are open objects without a userName).
  scimCreateUser: async (t, w, op) => ({ req: { label: 'the IdP provisions a user', method: op.method, url: op.path, body: { userName: uniqueEmail('scim') } }, auth: await scimAuth(t, w) }),
  scimReplaceUser: async (t, w, op) => scimOnFreshUser(t, w, op, (email) => ({ userName: email, title: 'Replaced' })),
  scimPatchUser: async (t, w, op) => scimOnFreshUser(t, w, op, () => ({ Operations: [{ op: 'replace', path: 'title', value: 'Patched' }] })),
  scimDeleteUser: async (t, w, op) => scimOnFreshUser(t, w, op, () => undefined),
  scimCreateGroup: async (t, w, op) => ({ req: { label: 'the IdP pushes a group', method: op.method, url: op.path, body: { displayName: 'Audited group' } }, auth: await scimAuth(t, w) }),
  scimReplaceGroup: async (t, w, op) => scimOnFreshGroup(t, w, op, { displayName: 'Replaced group' }),
  scimPatchGroup: async (t, w, op) => scimOnFreshGroup(t, w, op, { Operations: [{ op: 'replace', path: 'displayName', value: 'Patched group' }] }),
  scimDeleteGroup: async (t, w, op) => scimOnFreshGroup(t, w, op, undefined),
  createSsoConnection: async (_t, _w, op) => ({
    req: { label: 'an OIDC connection', method: op.method, url: op.path, body: { type: 'oidc', name: 'Audited IdP', issuer: 'https://login.example.test/audited', clientId: 'c', clientSecret: 'sso-client-secret-audited-0123' } },
  }),
  updateSsoConnection: async (_t, w, op) => ({ req: { label: 'rename the connection', method: op.method, url: urlFor(op, w), body: { name: 'Renamed IdP' } } }),
  deleteSsoConnection: fresh('/v1/sso/connections', { type: 'oidc', name: 'Doomed IdP', issuer: 'https://login.example.test/doomed', clientId: 'c', clientSecret: 'doomed-secret-0123456789' }, 'connectionId'),
  completeSsoSaml: async (t, w, op) => {
    // The world owner, already linked to a SAML subject, signs in again: one member.signed_in entry.
    // Earlier in the walk ownership may have moved to the target (transferOwnership), and mappings
    // apply to every non-owner: defaultRole admin keeps the caller's permissions for the rest of the walk.
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', w.owner.organizationId).execute();
    const idp = new SamlTestIdp();
    const created = await t.http.post('/v1/sso/connections').set(...bearer(w.owner.token)).send({ type: 'saml', name: 'Audited SAML', ...idp.config(), defaultRole: 'admin' });
    if (created.status !== 201) throw new Error(`SAML connection: ${created.status} ${JSON.stringify(created.body)}`);
    const connectionId = created.body.item.id as string;
    const now = t.clock.now();
    await t.db
      .insertInto('sso_identities')
      .values({ connection_id: connectionId, subject: 'audited-owner', organization_id: w.owner.organizationId, user_id: w.owner.userId, email: w.owner.email, created_at: now, last_sign_in_at: now })
      .execute();
    const start = await t.http.post('/v1/auth/sso/start').send({ connectionId });
    const sp = samlSpFor(t.settings.publicBaseUrl, connectionId);
    // Issued at the app's (manual) clock, which the validity window is checked against.
    const user = { nameId: 'audited-owner', nameIdFormat: NAMEID_PERSISTENT, attributes: { email: w.owner.email } };
    const answer = await idp.answer(start.body.authorizeUrl, sp, user, { now: t.clock.now() });
    const form = new URLSearchParams({ SAMLResponse: answer.samlResponse, RelayState: answer.relayState! }).toString();
    return { req: { label: 'the owner signs in through SAML', method: op.method, url: op.path, raw: { contentType: 'application/x-www-form-urlencoded', data: form } } };
  },
  createSsoDomain: async (_t, _w, op) => ({ req: { label: 'claim a domain', method: op.method, url: op.path, body: { domain: `audited-${Date.now().toString(36)}.example.com` } } }),
  verifySsoDomain: async (t, w, op) => {
    // A local DNS server publishing the world domain's challenge (the app asks it from now on).
    dns ??= await startDnsServer();
    t.settings.dnsServers = [dns.address];
    const id = w.ids.dom![0]!;
    const item = (await t.http.get(`/v1/sso/domains/${id}`).set(...bearer(w.owner.token))).body.item;
    dns.setTxt(item.verification.name, [item.verification.value]);
    return { req: { label: 'verify the world domain', method: op.method, url: urlFor(op, w) } };
  },
  deleteSsoDomain: fresh('/v1/sso/domains', { domain: `doomed-${Date.now().toString(36)}.example.com` }, 'domainId'),
  putSsoPolicy: async (_t, _w, op) => ({ req: { label: 'enforce SSO', method: op.method, url: op.path, body: { enforce: true } } }),
  updateMe: async (_t, _w, op) => ({ req: { label: 'the owner renames themself', method: op.method, url: op.path, body: { name: 'Audited Name' } } }),
  // Deletion locks the organization: the walk's world keeps working, so an organization of its own.
  deleteOrg: async (t, _w, op) => {
    const doomed = await createOrganization(t, 'Doomed Co');
    return { req: { label: 'an owner deletes their organization', method: op.method, url: op.path, body: { confirm: 'Doomed Co' } }, auth: auth(doomed.token), ids: [doomed.organizationId, doomed.memberId] };
  },
  restoreOrg: async (t, _w, op) => {
    const restored = await createOrganization(t, 'Restored Co');
    const deleted = await t.http.delete('/v1/org').set(...bearer(restored.token)).send({ confirm: 'Restored Co' });
    if (deleted.status !== 202) throw new Error(`delete for ${op.operationId}: ${deleted.status} ${JSON.stringify(deleted.body)}`);
    return { req: { label: 'the owner restores it', method: op.method, url: op.path }, auth: auth(restored.token), ids: [restored.organizationId, restored.memberId] };
  },
  deleteMe: async (t, w, op) => {
    const leaving = await addMember(t, w.owner.organizationId, 'member');
    return { req: { label: 'a member deletes their account', method: op.method, url: op.path, body: { password: PASSWORD } }, auth: auth(leaving.token), ids: [leaving.memberId] };
  },
  // The caller's own sessions: a member of the world with a second session of their own.
  revokeMySession: async (t, w, op) => {
    const { member, spareSessionId } = await memberWithSpareSession(t, w);
    return { req: { label: 'a member signs out their other session', method: op.method, url: urlFor(op, w, { sessionId: spareSessionId }) }, auth: auth(member.token), ids: [member.memberId] };
  },
  revokeOtherSessions: async (t, w, op) => {
    const { member } = await memberWithSpareSession(t, w);
    return { req: { label: 'a member signs out their other sessions', method: op.method, url: op.path }, auth: auth(member.token), ids: [member.memberId] };
  },
  adminUpdateOrganization: async (t, w, op) => {
    await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', w.owner.userId).execute();
    return { req: { label: 'a platform admin changes the plan', method: op.method, url: urlFor(op, w), body: { plan: 'enterprise' } } };
  },
};

/** A live authorization of the world's owner, as consent writes it. */
async function freshAuthorization(t: TestApp, w: OrgWorld): Promise<string> {
  const now = t.clock.now();
  const row = await insertAuthorization(
    t.db,
    {
      id: newId('oauthAuthorization'),
      organizationId: w.owner.organizationId,
      memberId: w.owner.memberId,
      clientId: `https://agent.example.test/${newId('oauthAuthorization')}.json`,
      clientType: 'metadata_document',
      clientName: 'Audited agent',
      scopes: ['members.read'],
      resource: `${t.settings.publicBaseUrl}/v1`,
      grantKey: null,
      expiresAt: new Date(now.getTime() + 86_400_000),
    },
    now,
  );
  return row.id;
}

/** A new member of the world signed in twice, and the id of the second session. */
async function memberWithSpareSession(t: TestApp, w: OrgWorld) {
  const member = await addMember(t, w.owner.organizationId, 'member');
  const spare = await t.http.post('/v1/auth/sign-in').send({ email: member.email, password: PASSWORD });
  const sessions = await t.http.get('/v1/me/sessions').set(...bearer(spare.body.session.token));
  return { member, spareSessionId: sessions.body.items.find((s: { current: boolean }) => s.current).id as string };
}

/** A SCIM token of its own (the walk revokes the world's when it reaches revokeScimToken). */
async function scimAuth(t: TestApp, w: OrgWorld): Promise<Record<string, string>> {
  const res = await t.http.post('/v1/scim/tokens').set(...bearer(w.owner.token)).send({ name: 'audit walk' });
  if (res.status !== 201) throw new Error(`SCIM token: ${res.status} ${JSON.stringify(res.body)}`);
  // Its first use records last-used (outside any change's transaction): do it before the snapshots.
  await t.http.get('/scim/v2/ServiceProviderConfig').set(auth(res.body.token));
  return auth(res.body.token);
}

/** A User provisioned for the operation through SCIM, so changing or removing it leaves the world's intact. */
async function scimOnFreshUser(t: TestApp, w: OrgWorld, op: SpecOperation, body: (email: string) => object | undefined): Promise<Prepared> {
  const headers = await scimAuth(t, w);
  const email = uniqueEmail('scim-fresh');
  const res = await t.http.post('/scim/v2/Users').set(headers).send({ userName: email });
  if (res.status !== 201) throw new Error(`provisioning for ${op.operationId}: ${res.status} ${JSON.stringify(res.body)}`);
  return { req: { label: `the IdP calls ${op.operationId}`, method: op.method, url: op.path.replace('{userId}', res.body.id), body: body(email) }, auth: headers };
}

async function scimOnFreshGroup(t: TestApp, w: OrgWorld, op: SpecOperation, body: object | undefined): Promise<Prepared> {
  const headers = await scimAuth(t, w);
  const res = await t.http.post('/scim/v2/Groups').set(headers).send({ displayName: `Fresh ${uniqueEmail('g')}` });
  if (res.status !== 201) throw new Error(`creating a group for ${op.operationId}: ${res.status} ${JSON.stringify(res.body)}`);
  return { req: { label: `the IdP calls ${op.operationId}`, method: op.method, url: op.path.replace('{groupId}', res.body.id), body }, auth: headers };
}

/** Creates a resource of its own for the operation, so removing it leaves the world's intact. */
function fresh(createPath: string, body: object, param: string): Builder {
  return async (t, w, op) => {
    const res = await t.http.post(createPath).set(...bearer(w.owner.token)).send(body);
    if (res.status !== 201) throw new Error(`creating for ${op.operationId}: ${res.status} ${JSON.stringify(res.body)}`);
    return { req: { label: `on a fresh ${createPath}`, method: op.method, url: urlFor(op, w, { [param]: res.body.item.id }) } };
  };
}

async function grantBody(_t: TestApp, w: OrgWorld, op: SpecOperation): Promise<Prepared> {
  return { req: { label: 'grant the target viewer', method: op.method, url: urlFor(op, w), body: { orgMembershipId: w.target.memberId, role: 'editor' } } };
}

/** Writes first, then what removes sub-resources, then what removes resources, sign-out last. */
function phase(op: SpecOperation): number {
  if (op.operationId === 'signOut') return 5;
  if (op.operationId === 'bootstrap') return -1;
  if (/^(revoke|remove)/.test(op.operationId) && op.operationId !== 'removeMember') return 2;
  if (op.method === 'delete' || /\/(delete|archive|cancel|disconnect-my-account)$/.test(op.path)) return 3;
  if (op.operationId === 'removeMember') return 4;
  return 1;
}

const operations = specOperations()
  .filter((op) => op.method !== 'get')
  .sort((a, b) => phase(a) - phase(b));

let t: TestApp;
let world: OrgWorld;
/** Secrets handed out or sent during the walk (keys, tokens, client secrets), for the final scan. */
const handedOut: Record<string, string> = {};

function collectSecrets(label: string, value: unknown): void {
  if (!value || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    // A role's `key` is its public identifier (docs/people-and-roles.md#roles-and-permissions), not a secret.
    if (k === 'key' && /^(create|update)Role /.test(label)) continue;
    if (typeof v === 'string' && /^(key|token|hostToken|secret|apiKey|clientSecret|subjectToken|password)$/.test(k) && v.length >= 8) handedOut[`${label}.${k}`] = v;
    else if (v && typeof v === 'object') collectSecrets(label, v);
  }
}
beforeAll(async () => {
  t = await createTestApp();
  await installCommitFailure();
  skipRequestSchemaValidation(); // SAML is tested in test/sso/saml.test.ts; here it only signs in
}, 120_000);
afterAll(async () => {
  await t.close();
  await dns?.close();
});
// putSsoPolicy enforces SSO, which cuts off the organization's sessions not made through its own
// connections (the walk's callers once ownership has moved): the rest of the walk runs without it.
afterEach(async () => {
  if (world) await t.db.updateTable('organizations').set({ sso_enforced: false }).where('id', '=', world.owner.organizationId).execute();
});

async function entryCount(): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_logs`.execute(t.db);
  return rows[0]!.n;
}

async function entryIds(): Promise<Set<string>> {
  return new Set((await t.db.selectFrom('audit_logs').select('id').execute()).map((r) => r.id));
}

async function entriesSince(seen: Set<string>) {
  const rows = await t.db.selectFrom('audit_logs').select(['id', 'action', 'target_type', 'target_id', 'organization_id', 'actor_type']).execute();
  return rows.filter((r) => !seen.has(r.id));
}

/** Every TypeID in a value (request, response, path), to check an entry names something the request touched. */
function idsIn(value: unknown, into = new Set<string>()): Set<string> {
  if (typeof value === 'string') for (const m of value.matchAll(/[a-z]+_[0-7][0-9a-hjkmnp-tv-z]{25}/g)) into.add(m[0]);
  else if (Array.isArray(value)) value.forEach((v) => idsIn(v, into));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => idsIn(v, into));
  return into;
}

/**
 * A deferred constraint trigger on audit_logs that fails the commit while its switch is on, for
 * failingAtCommit. Installed once: creating and dropping it around each request was four DDL
 * statements per candidate, each invalidating every cached plan that reads audit_logs. The switch
 * lives outside the public schema, so the snapshots and the table registry do not see it.
 */
async function installCommitFailure(): Promise<void> {
  await sql`CREATE SCHEMA audit_test`.execute(t.db);
  await sql`CREATE TABLE audit_test.switch (fail boolean NOT NULL)`.execute(t.db);
  await sql`INSERT INTO audit_test.switch VALUES (false)`.execute(t.db);
  await sql`CREATE FUNCTION audit_test.fail() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN IF (SELECT fail FROM audit_test.switch) THEN RAISE EXCEPTION ''forced failure at commit''; END IF; RETURN NULL; END'`.execute(t.db);
  await sql`CREATE CONSTRAINT TRIGGER audit_test_fail AFTER INSERT ON audit_logs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION audit_test.fail()`.execute(t.db);
}

/** Makes every audit insert fail at commit, for one request. */
async function failingAtCommit<T>(run: () => Promise<T>): Promise<T> {
  await sql`UPDATE audit_test.switch SET fail = true`.execute(t.db);
  try {
    return await run();
  } finally {
    await sql`UPDATE audit_test.switch SET fail = false`.execute(t.db);
  }
}

function describeRes(res: Response): string {
  return `${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
}

it('bootstrap of an empty platform writes organization.created', async () => {
  // The contract has the operation (a missing one fails here, not skips).
  expect(operations.map((o) => o.operationId)).toContain('bootstrap');
  const res = await t.http.post('/v1/bootstrap').send({ email: uniqueEmail('root'), password: PASSWORD, name: 'Root', organizationName: 'Platform' });
  expect(describeRes(res)).toMatch(/^201 /);
  const [entry] = await entriesSince(new Set());
  expect(await entryCount()).toBe(1);
  expect(entry).toMatchObject({ action: 'organization.created', target_type: 'organization', organization_id: res.body.organization.id });
  world = await buildWorld(t, 'A');
}, 120_000);

/**
 * An exemption is checked too. When its reason says the change is audited elsewhere ("audited as
 * <action>, <test file>"), that file must check that action. Otherwise the operation changes no
 * organization's data, so no request to it, refused or answered, may write an entry; and an
 * operation whose entry is checked elsewhere writes none here, where its generated requests cannot
 * hold what it needs.
 */
async function exemptionProblems(op: SpecOperation, reason: string, ownerAuth: Record<string, string>): Promise<string[]> {
  const problems: string[] = [];
  const elsewhere = /audited as ([a-z_]+\.[a-z_]+), (test\/[\w./-]+\.ts)/.exec(reason);
  if (elsewhere) {
    const [, action, file] = elsewhere;
    const text = existsSync(file!) ? readFileSync(file!, 'utf8') : '';
    if (!text.includes(`'${action}'`)) problems.push(`the exemption says ${file} checks the entry ${action}, but that file does not name it`);
  }
  const requests = [...badRequests(op, world, t.settings.bodyLimitBytes).slice(0, 3), ...validRequests(op, world, 3)];
  for (const req of requests) {
    const before = await entryCount();
    const res = await send(t, req, ownerAuth);
    const written = (await entryCount()) - before;
    if (written !== 0) problems.push(`exempt, but "${req.label}" (${res.status}) wrote ${written} audit entries: audit it and remove the exemption`);
  }
  return problems;
}

describe.each(operations.filter((op) => op.operationId !== 'bootstrap').map((op) => [op.operationId, op] as const))('%s', (operationId, op) => {
  it('writes one entry when it succeeds and none when it fails', async () => {
    expect(world).toBeDefined();
    const ownerAuth = ownerCredential(op, world);
    const problems: string[] = [];
    if (EXEMPT[operationId]) {
      expect(await exemptionProblems(op, EXEMPT[operationId], ownerAuth)).toEqual([]);
      return;
    }

    // Invalid requests (and a plain member where a role is needed): no entry.
    const refused = [...badRequests(op, world, t.settings.bodyLimitBytes).slice(0, 3).map((req) => ({ req, auth: ownerAuth }))];
    if (op.auth !== 'public') refused.push({ req: { label: 'as a plain member', method: op.method, url: urlFor(op, world, pathValues(op, world)), body: {} }, auth: auth(world.member.token) });
    for (const { req, auth: a } of refused) {
      const before = await entryCount();
      const res = await send(t, req, a);
      if (res.status < 300) continue; // a member may do it (their own resource): not a refusal
      if ((await entryCount()) !== before) problems.push(`refused request "${req.label}" (${res.status}) wrote an audit entry`);
    }

    // Candidates: the prepared request, then generated valid ones; the first that succeeds counts.
    const candidates: Prepared[] = [];
    if (REQUESTS[operationId]) candidates.push(await REQUESTS[operationId](t, world, op));
    for (const req of validRequests(op, world, 6)) candidates.push({ req, auth: ownerAuth });

    let succeeded = false;
    const tried: string[] = [];
    for (const { req, auth: a, ids } of candidates) {
      // First with the database failing at commit: no entry and no change at all.
      const before = await snapshot(t.db, { exclude: ['rate_limits'] });
      const failed = await failingAtCommit(() => send(t, req, a ?? ownerAuth));
      const diff = snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }));
      if (failed.status < 300) problems.push(`"${req.label}" succeeded (${failed.status}) although its audit entry could not be written`);
      if (diff.length) problems.push(`"${req.label}" failing at commit (${failed.status}) still changed: ${diff.join(', ')}`);

      const seen = await entryIds();
      collectSecrets(`${operationId} request`, req.body);
      const res = await send(t, req, a ?? ownerAuth);
      collectSecrets(`${operationId} answer`, res.body);
      const fresh = await entriesSince(seen);
      const written = fresh.length;
      if (res.status >= 300) {
        tried.push(`${req.label} → ${describeRes(res)}`);
        if (written !== 0) problems.push(`"${req.label}" failed (${res.status}) but wrote ${written} entries`);
        continue;
      }
      succeeded = true;
      // One entry per request: its side effects (a SCIM user's member provisioned or removed) are changes of that entry.
      if (written !== 1) {
        problems.push(`"${req.label}" succeeded (${res.status}) but wrote ${written} audit entries (expected exactly 1: call recordChange from src/audit once, in the service's transaction)`);
        break;
      }
      const entry = fresh[0];
      const known = idsIn([req.url, req.body, res.body, world.owner.organizationId, world.owner.memberId, world.owner.userId, ids ?? []]);
      if (!/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/.test(entry!.action)) problems.push(`action "${entry!.action}" is not '<resource>.<verb>'`);
      if (!entry!.target_type) problems.push('the entry has no target type');
      if (!entry!.target_id || !known.has(entry!.target_id)) problems.push(`target ${entry!.target_type}:${entry!.target_id} is none of the ids the request named or answered`);
      break;
    }
    if (!succeeded) {
      problems.push(
        `could not make ${operationId} succeed, so its audit entry is unchecked. Add a request to REQUESTS in test/hardening/audit.test.ts ` +
          `(or the resource to test/hardening/world.ts), or an EXEMPT reason if it changes no organization data. Tried: ${tried.join(' | ')}`,
      );
    }
    expect(problems).toEqual([]);
  }, 60_000);
});

describe('secrets', () => {
  it('are in neither the audit table nor its export (redacted where a change carried one)', async () => {
    const secrets = { ...world.secrets, ...handedOut };
    expect(Object.keys(handedOut).length).toBeGreaterThanOrEqual(5);
    // Every text and JSON column of every table, audit_logs included.
    expect(await findSecretsInDatabase(t.db, secrets)).toEqual([]);
    const redacted = await sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_logs WHERE changes::text LIKE '%[redacted]%'`.execute(t.db);
    expect(redacted.rows[0]!.n).toBeGreaterThan(0);

    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', world.owner.organizationId).execute();
    for (const format of ['ndjson', 'csv']) {
      const res = await t.http
        .get('/v1/audit-logs/export')
        .query({ format })
        .set(...bearer(world.owner.token))
        .buffer(true)
        .parse((r, done) => {
          let text = '';
          r.on('data', (c: Buffer) => (text += c.toString()));
          r.on('end', () => done(null, text));
        });
      expect(res.status).toBe(200);
      const text = res.body as string;
      expect(text).toContain('[redacted]');
      expect(Object.entries(secrets).filter(([, v]) => text.includes(v)).map(([k]) => k)).toEqual([]);
    }
  }, 60_000);
});
