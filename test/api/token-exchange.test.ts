import * as oauth from 'openid-client';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { discover, startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { ACCESS_TOKEN_TYPE, delegate, exchange, exchangeRefusal, workerWithCeiling, type TestWorker } from '../support/workers-oauth';

/**
 * RFC 8693 token exchange by a worker (docs/workers-and-usage.md#delegations-and-token-exchange),
 * driven by openid-client: a member's delegation answers a subject token naming the worker
 * (`may_act`); the worker, authenticated with its host token, exchanges it for a token acting as
 * the member with `act` naming the worker. Each rule of the exchange has its own test.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
let alice: OrgMember;
let worker: TestWorker;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  alice = await addMember(t, owner.organizationId, 'admin');
  worker = await workerWithCeiling(t, owner.token, ['members.read', 'teams.read', 'teams.manage']);
});
afterAll(() => t.close());

it('exchanges a delegation for a token acting as the member, with act naming the worker', async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read', 'teams.manage']);
  const tokens = await exchange(t, worker, delegation.subjectToken);
  expect(tokens).toMatchObject({ token_type: 'bearer', issued_token_type: ACCESS_TOKEN_TYPE, scope: 'members.read teams.manage' });
  const config = await discover(t, worker.id, worker.hostToken);
  const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!)), { issuer: t.base, audience: `${t.base}/v1`, typ: 'at+jwt' });
  expect(payload).toMatchObject({ sub: alice.memberId, act: { sub: worker.id }, client_id: worker.id, org_id: owner.organizationId, authorization_id: delegation.id });
  expect(payload.may_act).toBeUndefined();

  const team = await t.http.post('/v1/teams').set(...bearer(tokens.access_token)).send({ name: 'For Alice' });
  expect(team.status).toBe(201);
  const log = await t.http.get(`/v1/audit-logs?targetId=${team.body.item.id}`).set(...bearer(owner.token));
  expect(log.body.items[0].actor).toEqual({ type: 'member', id: alice.userId, memberId: alice.memberId, clientId: worker.id, act: { sub: worker.id } });
  expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });
  const exported = await t.http.get('/v1/audit-logs/export?format=ndjson').set(...bearer(owner.token));
  const actors = exported.text.trim().split('\n').map((line) => JSON.parse(line).actor);
  expect(actors).toContainEqual({ type: 'member', id: alice.userId, memberId: alice.memberId, clientId: worker.id, act: { sub: worker.id } });
});

it('the subject token itself is refused on the API (its audience is the token endpoint)', async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  expect(decodeJwt(delegation.subjectToken)).toMatchObject({ sub: alice.memberId, may_act: { sub: worker.id }, aud: `${t.base}/oauth/token` });
  expect((await t.http.get('/v1/members').set(...bearer(delegation.subjectToken))).status).toBe(401);
});

it('narrows to the requested scope and the worker ceiling', async () => {
  const narrowWorker = await workerWithCeiling(t, owner.token, ['members.read']);
  const delegation = await delegate(t, alice.token, narrowWorker.id, ['members.read', 'teams.manage']);
  const byCeiling = await exchange(t, narrowWorker, delegation.subjectToken);
  expect(byCeiling.scope).toBe('members.read');
  const full = await delegate(t, alice.token, worker.id, ['members.read', 'teams.manage']);
  const requested = await exchange(t, worker, full.subjectToken, { scope: 'members.read' });
  expect(requested.scope).toBe('members.read');
  expect((await t.http.post('/v1/teams').set(...bearer(requested.access_token)).send({ name: 'no' })).status).toBe(403);
});

it('refuses a scope wider than the subject token (invalid_scope)', async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  expect(await exchangeRefusal(t, worker, delegation.subjectToken, { scope: 'members.read teams.read' })).toMatchObject({ error: 'invalid_scope' });
});

it('refuses a subject token without may_act, or naming another worker (invalid_grant)', async () => {
  // A worker's own client-credentials token names no actor.
  const own = await oauth.clientCredentialsGrant(await discover(t, worker.id, worker.hostToken));
  expect(await exchangeRefusal(t, worker, own.access_token)).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('may_act') });
  const other = await workerWithCeiling(t, owner.token, ['members.read']);
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  expect(await exchangeRefusal(t, other, delegation.subjectToken)).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('may_act') });
  // A forged copy (claims changed, signature kept) is no delegation's token.
  const [h, , s] = delegation.subjectToken.split('.');
  const claims = { ...decodeJwt(delegation.subjectToken), may_act: { sub: other.id } };
  const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
  expect(await exchangeRefusal(t, other, forged)).toMatchObject({ error: 'invalid_grant' });
});

it('refuses an exchanged token as subject: one hop only (invalid_grant)', async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  const tokens = await exchange(t, worker, delegation.subjectToken);
  expect(await exchangeRefusal(t, worker, tokens.access_token)).toEqual({ error: 'invalid_grant', error_description: 'an exchanged token cannot be exchanged again' });
});

it("bounds the token's lifetime by the subject's, and refuses an expired subject (invalid_grant)", async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read'], 120);
  const tokens = await exchange(t, worker, delegation.subjectToken);
  expect(tokens.expires_in).toBeLessThanOrEqual(120);
  expect(tokens.expires_in).toBeGreaterThan(100);
  (t.clock as ManualClock).advance(100_000);
  const later = await exchange(t, worker, delegation.subjectToken);
  expect(later.expires_in).toBeLessThanOrEqual(20);
  (t.clock as ManualClock).advance(21_000);
  expect(await exchangeRefusal(t, worker, delegation.subjectToken)).toEqual({ error: 'invalid_grant', error_description: 'the subject token has expired' });
});

it("refuses another organization's subject token (invalid_grant)", async () => {
  const other = await createOrganization(t, 'Other');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', other.organizationId).execute();
  const theirs = await workerWithCeiling(t, other.token, ['members.read']);
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  expect(await exchangeRefusal(t, theirs, delegation.subjectToken)).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('another organization') });
});

it('refuses other clients the grant and a wrong subject_token_type', async () => {
  const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
  const wrongType = await t.http
    .post('/oauth/token')
    .auth(worker.id, worker.hostToken)
    .type('form')
    .send({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: delegation.subjectToken, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' });
  expect(wrongType.status).toBe(400);
  expect(wrongType.body.error).toBe('invalid_request');
  const sa = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'svc', role: 'member' });
  const secret = await t.http.post(`/v1/service-accounts/${sa.body.item.id}/secrets`).set(...bearer(owner.token)).send({});
  const refused = await t.http
    .post('/oauth/token')
    .auth(sa.body.item.id, secret.body.clientSecret)
    .type('form')
    .send({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: delegation.subjectToken, subject_token_type: ACCESS_TOKEN_TYPE });
  expect(refused.status).toBe(400);
  expect(refused.body.error).toMatch(/^(invalid_request|unauthorized_client)$/);
});
