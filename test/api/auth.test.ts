import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, signUp, uniqueEmail } from '../support/factories';
import { sha256Hex } from '../../src/lib/crypto';
import type { ManualClock } from '../support/clock';
import { deref, fixedValueDisagreements, loadContract, type Schema } from '../support/spec';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ settings: { bootstrapToken: 'boot-secret' } });
});
afterAll(() => t.close());

describe('bootstrap', () => {
  const body = { email: 'root@example.test', password: PASSWORD, name: 'Root', organizationName: 'Platform' };

  it('requires the bootstrap token when one is configured', async () => {
    expect((await t.http.get('/v1/bootstrap/status')).body).toEqual({ bootstrapped: false });
    const missing = await t.http.post('/v1/bootstrap').send(body);
    expect(missing.status).toBe(401);
    expect(missing.body.error).toBe('unauthorized');
    const wrong = await t.http.post('/v1/bootstrap').set('x-bootstrap-token', 'nope').send(body);
    expect(wrong.status).toBe(401);
  });

  it('creates a platform admin with an enterprise organization, once', async () => {
    const res = await t.http.post('/v1/bootstrap').set('x-bootstrap-token', 'boot-secret').send(body);
    expect(res.status).toBe(201);
    expect(res.body.organization.plan).toBe('enterprise');
    expect(res.body.member.role).toBe('owner');
    // The operator vouches for the first account's address.
    expect(res.body.user).toMatchObject({ emailVerified: true, emailVerifiedAt: expect.any(String) });
    expect(res.body.organization.owner).toMatchObject({ userId: res.body.user.id, email: body.email });
    // The contract's example shows what bootstrap gives: plan, role, status, verified address.
    const contract = loadContract();
    const created = deref(contract, contract.paths['/v1/bootstrap']!.post as { responses: Record<string, { content: Record<string, { schema: Schema; example: unknown }> }> });
    const { schema, example } = created.responses['201']!.content['application/json']!;
    expect(fixedValueDisagreements(schema, example, res.body)).toEqual([]);
    const org = await t.http.get('/v1/org').set(...bearer(res.body.session.token));
    expect(org.status).toBe(200);
    expect(org.body.organization.id).toBe(res.body.organization.id);

    const again = await t.http.post('/v1/bootstrap').set('x-bootstrap-token', 'boot-secret').send({ ...body, email: 'other@example.test' });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('already_bootstrapped');
    expect((await t.http.get('/v1/bootstrap/status')).body).toEqual({ bootstrapped: true });
  });
});

describe('sign-up, sign-in, sign-out', () => {
  it('signs up, rejects a duplicate e-mail case-insensitively, and signs in', async () => {
    const email = uniqueEmail('dup');
    const first = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'Dup' });
    expect(first.status).toBe(201);
    expect(first.body.session.token).toMatch(/^cps_/);
    const second = await t.http.post('/v1/auth/sign-up').send({ email: email.toUpperCase(), password: PASSWORD, name: 'Dup' });
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('email_taken');
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
    expect(signIn.status).toBe(200);
    expect(signIn.body.user.id).toBe(first.body.user.id);
  });

  it('answers the same for an unknown e-mail and a wrong password', async () => {
    const user = await signUp(t, 'pw');
    const wrong = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: 'not the password' });
    const unknown = await t.http.post('/v1/auth/sign-in').send({ email: uniqueEmail('ghost'), password: PASSWORD });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error).toBe('invalid_credentials');
  });

  it('stores only a hash of the session token and the password', async () => {
    const user = await signUp(t, 'hash');
    const session = await t.db.selectFrom('sessions').select(['token_hash']).where('user_id', '=', user.userId).executeTakeFirstOrThrow();
    expect(session.token_hash).toBe(sha256Hex(user.token));
    const row = await t.db.selectFrom('users').select(['password_hash']).where('id', '=', user.userId).executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain(PASSWORD);
  });

  it('records how and where each password session was opened', async () => {
    const email = uniqueEmail('origin');
    const up = await t.http.post('/v1/auth/sign-up').set('user-agent', 'origin-test/1.0').send({ email, password: PASSWORD, name: 'Origin' });
    expect(up.status).toBe(201);
    const signIn = await t.http.post('/v1/auth/sign-in').set('user-agent', 'origin-test/2.0').send({ email, password: PASSWORD });
    expect(signIn.status).toBe(200);
    const rows = await t.db
      .selectFrom('sessions')
      .select(['token_hash', 'auth_method', 'second_factor', 'ip', 'user_agent', 'last_used_at'])
      .where('user_id', '=', up.body.user.id)
      .execute();
    const of = (token: string) => rows.find((r) => r.token_hash === sha256Hex(token));
    const ip = expect.stringMatching(/\S/);
    expect(of(up.body.session.token)).toEqual({ token_hash: expect.any(String), auth_method: 'password', second_factor: null, ip, user_agent: 'origin-test/1.0', last_used_at: expect.any(Date) });
    expect(of(signIn.body.session.token)).toEqual({ token_hash: expect.any(String), auth_method: 'password', second_factor: null, ip, user_agent: 'origin-test/2.0', last_used_at: expect.any(Date) });
  });

  it('rejects a signed-out token at once', async () => {
    const owner = await createOrganization(t);
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).status).toBe(200);
    const out = await t.http.post('/v1/auth/sign-out').set(...bearer(owner.token));
    expect(out.status).toBe(204);
    const after = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('unauthorized');
  });

  it('expires sessions after SESSION_TTL', async () => {
    const owner = await createOrganization(t);
    const clock = t.clock as ManualClock;
    clock.advance(t.settings.sessionTtlMs + 1000);
    try {
      const res = await t.http.get('/v1/org').set(...bearer(owner.token));
      expect(res.status).toBe(401);
    } finally {
      clock.advance(-(t.settings.sessionTtlMs + 1000));
    }
  });

  it('validates bodies with the field in the path', async () => {
    const short = await t.http.post('/v1/auth/sign-up').send({ email: uniqueEmail(), password: 'short', name: 'x' });
    expect(short.status).toBe(400);
    expect(short.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'password'] }));
    const email = await t.http.post('/v1/auth/sign-up').send({ email: 'not-an-email', password: PASSWORD, name: 'x' });
    expect(email.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'email'] }));
    const extra = await t.http.post('/v1/auth/sign-in').send({ email: uniqueEmail(), password: PASSWORD, admin: true });
    expect(extra.status).toBe(400);
    expect(extra.body.details).toContainEqual({ message: 'is not allowed', path: ['body', 'admin'] });
    const missing = await t.http.post('/v1/auth/sign-in').send({ email: uniqueEmail() });
    expect(missing.body.details).toContainEqual({ message: 'is required', path: ['body', 'password'] });
  });
});

describe('the password rule (src/protection/passwords.ts)', () => {
  const refused = async (res: { status: number; body: { error: string; details: unknown } }, message: RegExp) => {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'password'], message: expect.stringMatching(message) }] });
  };

  it.each(['password', '12345678', 'Baseball', 'sunshine', 'iloveyou', 'trustno1', 'qwertyuiop', 'PASSWORD1'])('refuses the common password %s at sign-up and creates nothing', async (password) => {
    const email = uniqueEmail('common');
    await refused(await t.http.post('/v1/auth/sign-up').send({ email, password, name: 'C' }), /most commonly used/);
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
  });

  it('refuses the e-mail address (any case) and its local part as the password', async () => {
    const email = uniqueEmail('self');
    await refused(await t.http.post('/v1/auth/sign-up').send({ email, password: email.toUpperCase(), name: 'S' }), /e-mail/);
    await refused(await t.http.post('/v1/auth/sign-up').send({ email: 'long.local.part@corp.example', password: 'long.local.part', name: 'S' }), /e-mail/);
  });

  it('refuses them at bootstrap too, before the token is even looked at', async () => {
    const res = await t.http.post('/v1/bootstrap').set('x-bootstrap-token', 'boot-secret').send({ email: 'boot@corp.example', password: 'football', name: 'B', organizationName: 'P' });
    await refused(res, /most commonly used/);
  });

  // Not on a common list, and weak (docs/protection.md#passwords): the old main took each of them.
  it.each(['aaaaaaaa', 'abcd1234abcd', 'zxcvbnm,./', 'ab1!ab1!ab1!ab1!', 'a'.repeat(256), 'Summer2026!'])('refuses the weak password %s at sign-up with what makes it weak', async (password) => {
    const email = uniqueEmail('weak');
    await refused(await t.http.post('/v1/auth/sign-up').send({ email, password, name: 'W' }), /too easy to guess/);
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
  });

  it('counts the account\'s own words against it (its name, the parts of its address)', async () => {
    // Each is strong for anyone else's account.
    await refused(await t.http.post('/v1/auth/sign-up').send({ email: 'marguerite.okonkwo@corp.example', password: 'marguerite.ok', name: 'M' }), /your e-mail address or name/);
    await refused(await t.http.post('/v1/auth/sign-up').send({ email: uniqueEmail('named'), password: 'Vanterpool!', name: 'Thaddeus Vanterpool' }), /your e-mail address or name/);
    expect((await t.http.post('/v1/auth/sign-up').send({ email: uniqueEmail('other'), password: 'Vanterpool!', name: 'Someone Else' })).status).toBe(201);
  });

  it('refuses a weak new password on change and reset too, naming its field', async () => {
    const user = await signUp(t, 'changer');
    const res = await t.http.post('/v1/me/password').set(...bearer(user.token)).send({ currentPassword: PASSWORD, newPassword: 'aaaaaaaaaaaa' });
    expect(res.status).toBe(400);
    expect(res.body.details[0]).toMatchObject({ path: ['body', 'newPassword'], message: expect.stringMatching(/too easy to guess \(it is or contains repeated characters\)/) });
  });

  it('accepts an uncommon password', async () => {
    expect((await t.http.post('/v1/auth/sign-up').send({ email: uniqueEmail('fine'), password: 'Password1! but longer', name: 'F' })).status).toBe(201);
  });
});

describe('me and the active organization', () => {
  it('lists organizations and switches the active one', async () => {
    const owner = await createOrganization(t, 'First');
    const second = await t.http.post('/v1/org').set(...bearer(owner.token)).send({ name: 'Second' });
    expect(second.status).toBe(201);
    const me = await t.http.get('/v1/me').set(...bearer(owner.token));
    expect(me.body.organizations.map((o: { name: string }) => o.name).sort()).toEqual(['First', 'Second']);
    expect(me.body.activeOrganizationId).toBe(second.body.item.id);
    const sw = await t.http.post('/v1/me/active-organization').set(...bearer(owner.token)).send({ organizationId: owner.organizationId });
    expect(sw.status).toBe(200);
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).body.organization.name).toBe('First');
  });

  it('refuses to switch to an organization the caller is not in (404)', async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const res = await t.http.post('/v1/me/active-organization').set(...bearer(a.token)).send({ organizationId: b.organizationId });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('organization_not_found');
  });

  it('a new user without an organization gets 404 on GET /v1/org', async () => {
    const user = await signUp(t, 'loner');
    const res = await t.http.get('/v1/org').set(...bearer(user.token));
    expect(res.status).toBe(404);
    expect(typeof res.body.error).toBe('string');
  });
});
