import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, signUpAs } from '../support/factories';
import { OidcIdp } from '../fakes/oidc-idp';
import { callback, IDP_CLIENT, idpAccount, loginAt, SSO_ENV, ssoOrganization, uniqueDomain, verifyDomain } from '../support/sso-signin';
import { scimClient, scimOrganization } from '../support/scim';
import { settleResetWork } from '../../src/auth/passwords';

/**
 * Account pre-hijacking (docs/accounts.md#linking-accounts-safely): someone signs up with another person's address
 * and a password before that person arrives. When the address's owner then arrives through their
 * organization's identity provider — an OIDC first sign-in against oidc-provider, or a SCIM link —
 * in a domain the organization verified, the account is theirs and nothing the first party set
 * survives: the password is gone, every session and API key is revoked, the address is verified,
 * and the audit log says so. Run with EMAIL_VERIFICATION=optional, where the squatter can do the
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
  const second = await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD });
  expect(second.status).toBe(200);
  return { userId: up.body.user.id as string, sessions: [session, second.body.session.token as string], apiKey: key.body.key as string, organizationId: org.body.item.id as string };
}

/** Everything the squatter held is dead: password, sessions, API key. */
async function expectLockedOut(email: string, squatter: Awaited<ReturnType<typeof squat>>) {
  const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD });
  expect(signIn.status).toBe(401);
  expect(signIn.body.error).toBe('invalid_credentials');
  for (const token of squatter.sessions) expect((await t.http.get('/v1/me').set(...bearer(token))).status).toBe(401);
  expect((await t.http.get('/v1/org').set(...bearer(squatter.apiKey))).status).toBe(401);
  // Nor can the password be chosen again by a reset the squatter might have asked for earlier.
  const pending = await t.db.selectFrom('account_tokens').select('id').where('user_id', '=', squatter.userId).where('used_at', 'is', null).execute();
  expect(pending).toEqual([]);
}

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
  expect(inAcme).toMatchObject({ actor: { type: 'system' }, changes: { reason: { to: 'sso' }, emailVerified: { from: false, to: true }, passwordRemoved: true, sessionsRevoked: 2, apiKeysRevoked: 1 } });
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
      changes: expect.objectContaining({ memberId: { from: null, to: member!.id }, accountSecured: { from: null, to: { passwordRemoved: true, sessionsRevoked: 2, apiKeysRevoked: 1 } } }),
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
