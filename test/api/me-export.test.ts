import { createTestApp, type TestApp } from '../support/app';
import type { ManualClock } from '../support/clock';
import { bearer, createOrganization, PASSWORD } from '../support/factories';

/** GET /v1/me/export (docs/accounts.md#exporting-your-own-data): the caller's own data, no secret, a fresh session. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('GET /v1/me/export', () => {
  it('answers the caller\'s profile, memberships, sessions, factors and invitations, with no token or secret', async () => {
    const owner = await createOrganization(t, 'Mine Co');
    const other = await createOrganization(t, 'Inviter Co');
    const invitation = await t.http.post('/v1/invitations').set(...bearer(other.token)).send({ email: owner.email, role: 'member' });
    expect(invitation.status).toBe(201);
    const totp = await t.http.post('/v1/me/mfa/totp').set(...bearer(owner.token));
    expect(totp.status).toBeLessThan(300);
    const res = await t.http.get('/v1/me/export').set(...bearer(owner.token)).buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = JSON.parse(res.text);
    expect(doc).toMatchObject({ version: 1, profile: { id: owner.userId, email: owner.email } });
    expect(doc.memberships).toEqual([expect.objectContaining({ organizationId: owner.organizationId, organizationName: 'Mine Co', role: 'owner' })]);
    expect(doc.sessions.length).toBeGreaterThanOrEqual(1);
    expect(doc.sessions[0].createdAt).toMatch(/Z$/);
    expect(doc.totp).toEqual([expect.objectContaining({ createdAt: expect.any(String) })]);
    expect(doc.invitations).toEqual([expect.objectContaining({ organizationId: other.organizationId, organizationName: 'Inviter Co', status: 'pending' })]);
    // No credential or secret: the session token, the TOTP secret, nor any hash.
    expect(res.text.includes(owner.token)).toBe(false);
    const secret = JSON.stringify(totp.body).match(/"secret":"([^"]+)"/)?.[1];
    if (secret) expect(res.text.includes(secret)).toBe(false);
    expect(res.text).not.toMatch(/hash|sealed|"token"|secret/i);
    // Another user's export holds none of it.
    const mine = await t.http.get('/v1/me/export').set(...bearer(other.token));
    expect(mine.text.includes(owner.email)).toBe(false);
  });

  it('needs a fresh session', async () => {
    const owner = await createOrganization(t, 'Stale Co');
    (t.clock as ManualClock).advance(16 * 60_000);
    const stale = await t.http.get('/v1/me/export').set(...bearer(owner.token));
    expect([stale.status, stale.body.reason]).toEqual([403, 'fresh_session_required']);
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: PASSWORD });
    expect((await t.http.get('/v1/me/export').set(...bearer(signIn.body.session.token))).status).toBe(200);
    expect((await t.http.get('/v1/me/export')).status).toBe(401);
  });
});
