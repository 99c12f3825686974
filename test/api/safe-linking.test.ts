import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { asApiKey, bearer, createOrganization, PASSWORD, signUpAs } from '../support/factories';
import { OidcIdp } from '../fakes/oidc-idp';
import { callback, IDP_CLIENT, idpAccount, loginAt, SSO_ENV, ssoOrganization, uniqueDomain, verifyDomain } from '../support/sso-signin';
import { scimClient, scimOrganization } from '../support/scim';
import { settleResetWork } from '../../src/auth/passwords';
import { deliverToFolder, tokenIn } from '../support/mailbox';

/**
 * Account pre-hijacking (docs/accounts.md#linking-accounts-safely): someone signs up with another person's address
 * and a password before that person arrives. When the address's owner then arrives through their
 * organization's identity provider — an OIDC first sign-in against oidc-provider, or a SCIM link —
 * in a domain the organization verified, the account is theirs and nothing the first party set
 * survives: the password is gone, every session and API key is revoked, the credentials it made
 * for its organization (a SCIM token, a service account's secret and key, a worker's host token)
 * end, the address is verified, and the audit log says so. A password reset through the mailed
 * link is the same first proof and ends the same credentials. Run with EMAIL_VERIFICATION=optional, where the squatter can do the
 * most (make an organization and an API key); the default gate only narrows what they can do.
 */
let t: TestApp;
let idp: OidcIdp;

beforeAll(async () => {
  idp = await OidcIdp.start({ clients: [IDP_CLIENT], accounts: {} });
  t = await createTestApp({ env: { ...LOCAL_FAKES, ...SSO_ENV, EMAIL_VERIFICATION: 'optional' } });
});
afterAll(async () => {
  await t?.close();
  await idp?.stop();
});

const ATTACKER_PASSWORD = 'the squatters own passphrase';

/** The squatter: signs up as `email` with their password, makes an organization and an API key. */
async function squat(email: string) {
  const up = await t.http.post('/v1/auth/sign-up').send({ email, password: ATTACKER_PASSWORD, name: 'Not Alice' });
  expect(up.status).toBe(201);
  expect(up.body.user.emailVerified).toBe(false);
  const session = up.body.session.token as string;
  const org = await t.http.post('/v1/org').set(...bearer(session)).send({ name: 'Squat Co' });
  expect(org.status).toBe(201);
  const reauthed = await t.http.post('/v1/auth/reauthenticate').set(...bearer(session)).send({ password: ATTACKER_PASSWORD });
  expect(reauthed.status).toBe(200);
  const key = await t.http.post('/v1/api-keys').set(...bearer(session)).send({ name: 'backdoor' });
  expect(key.status).toBe(201);
  expect((await t.http.get('/v1/teams').set(...asApiKey(key.body.key))).status).toBe(200);
  const second = await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD });
  expect(second.status).toBe(200);
  const organizationId = org.body.item.id as string;
  // The organization's own credentials: an IdP token, a service account's secret and key, a worker.
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', organizationId).execute();
  const scim = await t.http.post('/v1/scim/tokens').set(...bearer(session)).send({ name: 'IdP' });
  expect(scim.status).toBe(201);
  const account = await t.http.post('/v1/service-accounts').set(...bearer(session)).send({ name: 'robot', role: 'admin' });
  expect(account.status).toBe(201);
  const secret = await t.http.post(`/v1/service-accounts/${account.body.item.id}/secrets`).set(...bearer(session)).send({});
  expect(secret.status).toBe(201);
  const accountKey = await t.http.post(`/v1/service-accounts/${account.body.item.id}/api-keys`).set(...bearer(session)).send({ name: 'robot key' });
  expect(accountKey.status).toBe(201);
  const worker = await t.http.post('/v1/workers').set(...bearer(session)).send({ name: 'runner' });
  expect(worker.status).toBe(201);
  const credentials = {
    scimToken: scim.body.token as string,
    serviceAccountId: account.body.item.id as string,
    serviceAccountKey: accountKey.body.key as string,
    workerId: worker.body.item.id as string,
    workerToken: worker.body.hostToken as string,
  };
  // Each works before the address's owner arrives.
  await expectCredentials(credentials, 200);
  return { userId: up.body.user.id as string, sessions: [session, second.body.session.token as string], apiKey: key.body.key as string, organizationId, credentials };
}

/** What each of the squatter's organization credentials answers: 200 while live, 401 once ended. */
async function expectCredentials(c: { scimToken: string; serviceAccountKey: string; workerId: string; workerToken: string }, status: 200 | 401) {
  expect((await t.http.get('/scim/v2/Users').set(...bearer(c.scimToken))).status).toBe(status);
  expect((await t.http.get('/v1/teams').set(...asApiKey(c.serviceAccountKey))).status).toBe(status);
  expect((await t.http.post(`/v1/workers/${c.workerId}/heartbeat`).set('x-worker-token', c.workerToken).send({})).status).toBe(status);
}

/** Everything the squatter held is dead: password, sessions, API key. */
async function expectLockedOut(email: string, squatter: Awaited<ReturnType<typeof squat>>) {
  const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD });
  expect(signIn.status).toBe(401);
  expect(signIn.body.error).toBe('invalid_credentials');
  for (const token of squatter.sessions) expect((await t.http.get('/v1/me').set(...bearer(token))).status).toBe(401);
  expect((await t.http.get('/v1/teams').set(...asApiKey(squatter.apiKey))).status).toBe(401);
  await expectCredentials(squatter.credentials, 401);
  // The service account is disabled with no secret left: enabling it revives nothing the squatter knew.
  const account = await t.db.selectFrom('service_accounts').select('disabled_at').where('id', '=', squatter.credentials.serviceAccountId).executeTakeFirstOrThrow();
  expect(account.disabled_at).not.toBeNull();
  expect(await t.db.selectFrom('service_account_secrets').select('id').where('service_account_id', '=', squatter.credentials.serviceAccountId).execute()).toEqual([]);
  // Nor can the password be chosen again by a reset the squatter might have asked for earlier.
  const pending = await t.db.selectFrom('account_tokens').select('id').where('user_id', '=', squatter.userId).where('used_at', 'is', null).execute();
  expect(pending).toEqual([]);
}

/** What ending the squatter's credentials counts: its API key, the SCIM token, the service account, the worker's token. */
const ENDED = { apiKeysRevoked: 1, scimTokensRevoked: 1, serviceAccountsDisabled: 1, workerTokensReplaced: 1 };

async function securedEntries(token: string, organizationId: string) {
  const res = await t.http.get('/v1/audit-logs').query({ action: 'member.account_secured' }).set(...bearer(token));
  expect(res.status).toBe(200);
  return (res.body.items as { organizationId: string; changes: Record<string, unknown>; actor: { type: string } }[]).filter((e) => e.organizationId === organizationId);
}

test('SSO: a first sign-in in a verified domain takes over an unverified account of that address', async () => {
  const domain = uniqueDomain();
  const email = `alice@${domain}`;
  const squatter = await squat(email);
  // A password reset link the squatter asked for must die too.
  expect((await t.http.post('/v1/auth/password-reset').send({ email })).status).toBe(202);
  await settleResetWork();
  expect(await t.db.selectFrom('account_tokens').select('purpose').where('user_id', '=', squatter.userId).where('used_at', 'is', null).execute()).toContainEqual({ purpose: 'password_reset' });

  // Acme sets up SSO and verifies the domain after the sign-up.
  const acme = await ssoOrganization(t, idp);
  await verifyDomain(t, acme.owner.organizationId, domain);
  const sub = idpAccount(idp, { email, name: 'Alice' });
  const res = await callback(t, await loginAt(t, idp, { connectionId: acme.connectionId }, sub));
  expect(res.status).toBe(200);
  // The same account (its id and memberships stay), now proven by the provider.
  expect(res.body.user).toMatchObject({ id: squatter.userId, email, emailVerified: true });

  await expectLockedOut(email, squatter);
  // Alice's own session works, in Acme.
  const alice = res.body.session.token as string;
  expect((await t.http.get('/v1/org').set(...bearer(alice))).body.organization.id).toBe(acme.owner.organizationId);

  // Recorded in Acme and in the organization the squatter made.
  const [inAcme] = await securedEntries(acme.owner.token, acme.owner.organizationId);
  expect(inAcme).toMatchObject({ actor: { type: 'system' }, changes: { reason: { to: 'sso' }, emailVerified: { from: false, to: true }, passwordRemoved: true, sessionsRevoked: 2, ...ENDED } });
  const inSquat = await t.db.selectFrom('audit_logs').select('action').where('organization_id', '=', squatter.organizationId).where('action', '=', 'member.account_secured').execute();
  expect(inSquat).toHaveLength(1);

  // A later sign-in changes nothing more (the account is verified).
  const again = await callback(t, await loginAt(t, idp, { connectionId: acme.connectionId }, sub));
  expect(again.status).toBe(200);
  expect((await t.http.get('/v1/me').set(...bearer(alice))).status).toBe(200);
  expect(await securedEntries(acme.owner.token, acme.owner.organizationId)).toHaveLength(1);
});

test('SSO: a verified account is linked as it is (its password and sessions stay)', async () => {
  const domain = uniqueDomain();
  const email = `bob@${domain}`;
  const bob = await signUpAs(t, email, 'Bob');
  const acme = await ssoOrganization(t, idp);
  await verifyDomain(t, acme.owner.organizationId, domain);
  const res = await callback(t, await loginAt(t, idp, { connectionId: acme.connectionId }, idpAccount(idp, { email })));
  expect(res.status).toBe(200);
  expect(res.body.user.id).toBe(bob.userId);
  expect((await t.http.get('/v1/me').set(...bearer(bob.token))).status).toBe(200);
  expect((await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD })).status).toBe(200);
  expect(await securedEntries(acme.owner.token, acme.owner.organizationId)).toEqual([]);
});

test('SCIM: linking a directory user to an unverified account in a verified domain takes it over', async () => {
  const domain = uniqueDomain();
  const email = `carol@${domain}`;
  const squatter = await squat(email);
  const acme = await scimOrganization(t, 'Acme Directory');
  await verifyDomain(t, acme.owner.organizationId, domain);
  const created = await scimClient(t, acme.token).post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, active: true });
  expect(created.status).toBe(201);
  const member = await t.db.selectFrom('members').select('id').where('organization_id', '=', acme.owner.organizationId).where('user_id', '=', squatter.userId).executeTakeFirst();
  expect(member).toBeDefined();

  await expectLockedOut(email, squatter);
  const user = await t.db.selectFrom('users').select(['email_verified_at']).where('id', '=', squatter.userId).executeTakeFirstOrThrow();
  expect(user.email_verified_at).not.toBeNull();
  // Recorded in the provisioning request's one entry in Acme, and on its own in the squatter's organization.
  expect(await securedEntries(acme.owner.token, acme.owner.organizationId)).toEqual([]);
  const provisioned = await t.http.get('/v1/audit-logs').query({ targetId: created.body.id }).set(...bearer(acme.owner.token));
  expect(provisioned.body.items).toEqual([
    expect.objectContaining({
      action: 'directory_user.provisioned',
      actor: expect.objectContaining({ type: 'scim' }),
      changes: expect.objectContaining({ memberId: { from: null, to: member!.id }, accountSecured: { from: null, to: { passwordRemoved: true, sessionsRevoked: 2, ...ENDED } } }),
    }),
  ]);
  const inSquat = await t.db.selectFrom('audit_logs').select('action').where('organization_id', '=', squatter.organizationId).where('action', '=', 'member.account_secured').execute();
  expect(inSquat).toHaveLength(1);
  const inAcme = await t.db.selectFrom('audit_logs').select('action').where('organization_id', '=', acme.owner.organizationId).where('request_id', '=', (await t.db.selectFrom('audit_logs').select('request_id').where('target_id', '=', created.body.id).executeTakeFirstOrThrow()).request_id).execute();
  expect(inAcme).toEqual([{ action: 'directory_user.provisioned' }]);
});

test('SCIM: a verified account is linked as it is', async () => {
  const domain = uniqueDomain();
  const email = `dan@${domain}`;
  const dan = await signUpAs(t, email, 'Dan');
  const acme = await scimOrganization(t, 'Acme Directory');
  await verifyDomain(t, acme.owner.organizationId, domain);
  expect((await scimClient(t, acme.token).post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, active: true })).status).toBe(201);
  expect((await t.http.get('/v1/me').set(...bearer(dan.token))).status).toBe(200);
  expect((await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD })).status).toBe(200);
});

test('a password reset through the mailed link is the first proof of the address: what the account made before ends', async () => {
  const email = `frank@${uniqueDomain()}`;
  const squatter = await squat(email);
  await deliverToFolder(t);
  expect((await t.http.post('/v1/auth/password-reset').send({ email })).status).toBe(202);
  await settleResetWork();
  const mail = (await deliverToFolder(t)).filter((m) => m.to === email).at(-1)!;
  const confirmed = await t.http.post('/v1/auth/password-reset/confirm').send({ token: tokenIn(mail, '/reset-password'), password: 'the real owners passphrase' });
  expect(confirmed.status).toBe(200);

  for (const token of squatter.sessions) expect((await t.http.get('/v1/me').set(...bearer(token))).status).toBe(401);
  expect((await t.http.get('/v1/teams').set(...asApiKey(squatter.apiKey))).status).toBe(401);
  await expectCredentials(squatter.credentials, 401);
  const owner = await t.http.post('/v1/auth/sign-in').send({ email, password: 'the real owners passphrase' });
  expect(owner.status).toBe(200);
  const entries = await t.http.get('/v1/audit-logs').query({ action: 'member.password_reset' }).set(...bearer(owner.body.session.token));
  expect(entries.body.items).toEqual([expect.objectContaining({ changes: expect.objectContaining({ emailVerified: { from: false, to: true }, ...ENDED }) })]);
});

test('a password reset of a verified account keeps the credentials it made (only its sessions end)', async () => {
  const email = `gina@${uniqueDomain()}`;
  const gina = await signUpAs(t, email, 'Gina');
  expect((await t.http.post('/v1/org').set(...bearer(gina.token)).send({ name: 'Gina Co' })).status).toBe(201);
  expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(gina.token)).send({ password: PASSWORD })).status).toBe(200);
  const key = await t.http.post('/v1/api-keys').set(...bearer(gina.token)).send({ name: 'mine' });
  expect(key.status).toBe(201);
  expect((await t.http.post('/v1/auth/password-reset').send({ email })).status).toBe(202);
  await settleResetWork();
  const mail = (await deliverToFolder(t)).filter((m) => m.to === email).at(-1)!;
  expect((await t.http.post('/v1/auth/password-reset/confirm').send({ token: tokenIn(mail, '/reset-password'), password: 'ginas new passphrase' })).status).toBe(200);
  expect((await t.http.get('/v1/me').set(...bearer(gina.token))).status).toBe(401);
  expect((await t.http.get('/v1/teams').set(...asApiKey(key.body.key))).status).toBe(200);
});

test('under the default EMAIL_VERIFICATION=required the squatter could only wait, and still loses the account', async () => {
  const strict = await createTestApp({ env: { ...LOCAL_FAKES, ...SSO_ENV } });
  try {
    const domain = uniqueDomain();
    const email = `erin@${domain}`;
    const up = await strict.http.post('/v1/auth/sign-up').send({ email, password: ATTACKER_PASSWORD, name: 'Not Erin' });
    expect((await strict.http.post('/v1/org').set(...bearer(up.body.session.token)).send({ name: 'Squat' })).body.reason).toBe('email_not_verified');
    const owner = await createOrganization(strict, 'Strict Acme');
    await strict.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    await verifyDomain(strict, owner.organizationId, domain);
    const scim = await strict.http.post('/v1/scim/tokens').set(...bearer(owner.token)).send({ name: 'IdP' });
    expect((await scimClient(strict, scim.body.token).post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, active: true })).status).toBe(201);
    expect((await strict.http.get('/v1/me').set(...bearer(up.body.session.token))).status).toBe(401);
    expect((await strict.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD })).status).toBe(401);
  } finally {
    await strict.close();
  }
});
