import type { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, PASSWORD } from '../support/factories';
import { specOperations, type SpecOperation } from '../support/spec';
import { PERMISSION_CATALOGUE, isPermission } from '../../src/access/permissions';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { send, validRequest, type GenRequest } from './generate';
import { buildWorld, type OrgWorld } from './world';

/**
 * Every authenticated operation, with every kind of dead credential: none, forged, signed out,
 * expired, a revoked or expired API key, the key of a removed member — each is a 401 and changes
 * nothing. Session-only operations refuse a valid API key. Operations that need a role refuse a
 * member without it with 403 and a `reason`.
 */
let t: TestApp;
let world: OrgWorld;
let clock: ManualClock;
const dead: Record<string, Record<string, string>> = {};
const deadForScim: Record<string, Record<string, string>> = {};
let liveKey: string;

/**
 * Who must be refused with 403, read from the spec's extensions (never from summary text):
 * `x-platform-admin` and an `x-permission` the plain member role lacks (catalogue minimum above
 * `member`) → a plain member; `x-resource-role: editor|manager` → a member who is only a viewer of
 * every resource (the world grants the target viewer everywhere); `x-resource-role: creator` → a
 * member who did not create it.
 */
function refusedCaller(op: SpecOperation): { who: 'member' | 'target'; why: string } | null {
  if (op.platformAdmin) return { who: 'member', why: 'x-platform-admin' };
  if (op.permission) {
    if (!isPermission(op.permission)) throw new Error(`${op.operationId}: x-permission ${op.permission} is not in src/access/permissions.ts`);
    if (PERMISSION_CATALOGUE[op.permission].minimum !== 'member') return { who: 'member', why: `x-permission ${op.permission}` };
  }
  if (op.resourceRole === 'editor' || op.resourceRole === 'manager') return { who: 'target', why: `x-resource-role ${op.resourceRole}` };
  if (op.resourceRole === 'creator') return { who: 'member', why: 'x-resource-role creator' };
  return null;
}

async function signIn(email: string): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
  if (res.status !== 200) throw new Error(`sign-in ${res.status}`);
  return res.body.session.token;
}

async function createKey(token: string, body: object = { name: 'k' }): Promise<{ id: string; key: string }> {
  const res = await t.http.post('/v1/api-keys').set(...bearer(token)).send(body);
  if (res.status !== 201) throw new Error(`create key ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.item.id, key: res.body.key };
}

beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
  world = await buildWorld(t, 'A');
  liveKey = world.ownerKey;

  const signedOut = await signIn(world.owner.email);
  expect((await t.http.post('/v1/auth/sign-out').set(...bearer(signedOut))).status).toBe(204);
  dead['a signed-out session'] = { authorization: `Bearer ${signedOut}` };
  dead['no credentials'] = {};
  dead['a forged session token'] = { authorization: 'Bearer cps_forgedforgedforgedforgedforgedforgedforg' };
  dead['a malformed authorization header'] = { authorization: 'Basic b3duZXI6cGFzc3dvcmQ=' };
  dead['a forged API key'] = { 'x-api-key': 'cpk_forgedforgedforgedforgedforgedforgedforge' };

  const revoked = await createKey(world.owner.token);
  expect((await t.http.delete(`/v1/api-keys/${revoked.id}`).set(...bearer(world.owner.token))).status).toBe(204);
  dead['a revoked API key'] = { 'x-api-key': revoked.key };

  // The admin's key dies with the admin's membership (removal through the API).
  const adminKey = await createKey(world.admin.token);
  expect((await t.http.delete(`/v1/members/${world.admin.memberId}`).set(...bearer(world.owner.token))).status).toBe(204);
  dead["a removed member's API key"] = { 'x-api-key': adminKey.key };

  // SCIM routes: a revoked SCIM token; and a live session or API key is no SCIM credential.
  const revokedScim = await t.http.post('/v1/scim/tokens').set(...bearer(world.owner.token)).send({ name: 'revoked' });
  expect((await t.http.delete(`/v1/scim/tokens/${revokedScim.body.item.id}`).set(...bearer(world.owner.token))).status).toBe(204);
  deadForScim['a revoked SCIM token'] = { authorization: `Bearer ${revokedScim.body.token}` };
  deadForScim['a live session (not a SCIM token)'] = { authorization: `Bearer ${world.owner.token}` };
  deadForScim['a live API key as a bearer token'] = { authorization: `Bearer ${liveKey}` };
}, 180_000);
afterAll(() => t.close());

const operations = specOperations().filter((op) => op.auth !== 'public');

async function expectUnchanged<T>(run: () => Promise<T>): Promise<T> {
  const before = await snapshot(t.db, { exclude: ['rate_limits'] });
  const result = await run();
  expect(snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }))).toEqual([]);
  return result;
}

/** Bodies with rules the schema cannot express (a grant names exactly one target). */
function semanticBody(op: SpecOperation): object | undefined {
  if (/^grant\w+Access$/.test(op.operationId)) return { orgMembershipId: world.target.memberId, role: 'editor' };
  if (op.operationId === 'updateWebhook') return { description: 'Changed by hardening' };
  // An audit stream has no name: its change is enabling or disabling it.
  if (op.operationId === 'updateAuditStream') return { enabled: false };
  if (/^update/.test(op.operationId) && op.body) return { name: 'Renamed by hardening' };
  return undefined;
}

function requestFor(op: SpecOperation): GenRequest {
  const req = validRequest(op, world);
  const body = semanticBody(op);
  return body ? { ...req, body } : req;
}

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it('answers 401 to every dead credential and changes nothing', async () => {
    const req = requestFor(op);
    const wrong: string[] = [];
    // Made before the snapshot: creating a key is itself a change (audited), unlike what is checked here.
    const expiring = await createKey(world.owner.token, { name: 'short', expiresAt: new Date(clock.now().getTime() + 3_600_000).toISOString() });
    await expectUnchanged(async () => {
      const credentials = op.auth === 'scim' ? { ...dead, ...deadForScim } : dead;
      for (const [label, headers] of Object.entries(credentials)) {
        const res = await send(t, req, headers);
        // /scim/v2 answers a SCIM error body (status as a string); everything else exactly {error: 'unauthorized'} (docs/api-conventions.md#errors).
        const unauthorized = op.auth === 'scim' ? res.body.status === '401' && res.body.schemas?.[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' : JSON.stringify(res.body) === '{"error":"unauthorized"}';
        if (res.status !== 401 || !unauthorized) wrong.push(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`);
      }
      // Expired: the same owner session and an expiring key, seen after their end.
      clock.advance(t.settings.sessionTtlMs + 60_000);
      try {
        const expired: Record<string, Record<string, string>> = {
          'an expired session': { authorization: `Bearer ${world.owner.token}` },
          'an expired API key': { 'x-api-key': expiring.key },
        };
        for (const [label, headers] of Object.entries(expired)) {
          const res = await send(t, req, headers);
          if (res.status !== 401) wrong.push(`${label}: ${res.status}`);
        }
      } finally {
        clock.advance(-(t.settings.sessionTtlMs + 60_000));
      }
    });
    await t.db.deleteFrom('api_keys').where('id', '=', expiring.id).execute();
    expect(wrong).toEqual([]);
  });

  it(op.auth === 'session' || op.auth === 'worker' || op.auth === 'scim' ? `refuses a valid API key (${op.auth} only)` : 'accepts a valid API key', async () => {
    const req = requestFor(op);
    if (op.auth === 'session' || op.auth === 'worker' || op.auth === 'scim') {
      const res = await expectUnchanged(() => send(t, req, { 'x-api-key': liveKey }));
      expect(res.status).toBe(401);
    } else if (op.method === 'get') {
      const res = await send(t, req, { 'x-api-key': liveKey });
      expect(res.status).not.toBe(401);
      expect(res.status).not.toBe(500);
    }
  });

  const refused = refusedCaller(op);
  if (refused) {
    it(`refuses a member without it (${refused.why}) with 403 and a reason`, async () => {
      const caller = refused.who === 'target' ? world.target : world.member;
      const res = await expectUnchanged(() => send(t, requestFor(op), { authorization: `Bearer ${caller.token}` }));
      expect({ status: res.status, reason: typeof res.body.reason }).toEqual({ status: 403, reason: 'string' });
    });
  }
});
