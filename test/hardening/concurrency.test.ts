import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/server/app';
import { connectServer, type Database } from '../../src/db/connect';
import { createTestApp, type TestApp } from '../support/app';
import { serverUrl, testDbKind } from '../support/env';
import { addMember, bearer, createOrganization, signUp, type OrgMember, type OrgOwner } from '../support/factories';
import { OIDC_CONNECTION } from '../support/sso';
import { invitationTokenFor } from '../support/mailbox';

/**
 * 50 parallel grants, revokes, publishes and invitation accepts on the same targets, spread over
 * two app instances with their own connection pools on the same database (two processes as the
 * database sees them; on the embedded database, one app). Afterwards the state is consistent: one
 * active grant, one removal time, one membership of the plugin, one member.
 */
const N = 50;
let t: TestApp;
let second: Database | undefined;
let apps: ReturnType<typeof supertest>[];
let owner: OrgOwner;
let target: OrgMember;
let marketplaceId: string;
let pluginId: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_INVITATION_ACCEPT_USER: '1000/15m' } });
  apps = [t.http];
  if (testDbKind() === 'pg') {
    second = connectServer(serverUrl(t.database.name!));
    apps.push(supertest(createApp({ db: second.db, clock: t.clock, logger: pino({ level: 'silent' }), fetch, settings: t.settings, validateResponses: true, compileValidatorsAtStart: false })));
  }
  owner = await createOrganization(t);
  target = await addMember(t, owner.organizationId);
  const m = await t.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'Race Market' });
  expect(m.status).toBe(201);
  marketplaceId = m.body.item.id;
  const p = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Race Plugin', description: 'r' });
  expect(p.status).toBe(201);
  pluginId = p.body.item.id;
}, 60_000);
afterAll(async () => {
  await second?.close();
  await t.close();
});

const via = (i: number) => apps[i % apps.length]!;

async function grantsOf(memberId: string): Promise<{ id: string; role: string; removedAt: string | null }[]> {
  const res = await t.http.get(`/v1/marketplaces/${marketplaceId}/access?limit=100`).set(...bearer(owner.token));
  expect(res.status).toBe(200);
  return res.body.items.filter((g: { orgMembershipId?: string | null }) => g.orgMembershipId === memberId);
}

it(`${N} parallel grants to one member leave exactly one active grant`, async () => {
  const answers = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      via(i).post(`/v1/marketplaces/${marketplaceId}/access`).set(...bearer(owner.token)).send({ orgMembershipId: target.memberId, role: i % 2 ? 'editor' : 'viewer' }),
    ),
  );
  expect(answers.filter((r) => ![200, 201].includes(r.status)).map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
  expect(answers.filter((r) => r.status === 201).length).toBe(1);
  const grants = await grantsOf(target.memberId);
  expect(grants.filter((g) => !g.removedAt)).toHaveLength(1);
  expect(new Set(answers.map((r) => r.body.item.id))).toEqual(new Set([grants[0]!.id]));
});

it(`${N} parallel revokes of one grant agree on one removal`, async () => {
  const [grant] = await grantsOf(target.memberId);
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => via(i).delete(`/v1/marketplaces/${marketplaceId}/access/${grant!.id}`).set(...bearer(owner.token))));
  expect(answers.filter((r) => r.status >= 300).map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
  const after = await grantsOf(target.memberId);
  expect(after).toHaveLength(1);
  expect(after[0]!.removedAt).toEqual(expect.any(String));
  const removedAts = new Set(answers.map((r) => r.body?.item?.removedAt).filter(Boolean));
  expect(removedAts.size).toBeLessThanOrEqual(1);
});

it(`${N} parallel publishes of one plugin make one membership`, async () => {
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => via(i).post(`/v1/marketplaces/${marketplaceId}/plugins`).set(...bearer(owner.token)).send({ pluginId })));
  expect(answers.filter((r) => ![200, 201].includes(r.status)).map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
  expect(answers.filter((r) => r.status === 201).length).toBe(1);
  const list = await t.http.get(`/v1/marketplaces/${marketplaceId}/plugins?limit=100`).set(...bearer(owner.token));
  expect(list.body.items.filter((p: { id: string }) => p.id === pluginId)).toHaveLength(1);
});

it(`${N} parallel accepts of one invitation make one member`, async () => {
  const invitee = await signUp(t, 'invitee');
  const inv = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: invitee.email, role: 'member' });
  expect(inv.status).toBe(201);
  const token = await invitationTokenFor(t, invitee.email);
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => via(i).post('/v1/invitations/accept').set(...bearer(invitee.token)).send({ token })));
  expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
  expect(answers.filter((r) => r.status !== 200 && !(r.status === 409 && r.body.error === 'invitation_not_pending')).map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
  const members = await t.http.get('/v1/members?limit=100').set(...bearer(owner.token));
  expect(members.body.items.filter((m: { userId: string }) => m.userId === invitee.userId)).toHaveLength(1);
});

describe('roles deleted while SSO connections are given them', () => {
  const pairs = async (label: string, mapped: boolean) => {
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    const out: { connectionId: string; roleId: string; key: string }[] = [];
    for (let i = 0; i < 10; i++) {
      const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: `${label}-${i}`, name: 'Race', permissions: [] });
      const roleMappings = mapped ? [{ group: 'g', role: role.body.item.key }] : [];
      const connection = await t.http.post('/v1/sso/connections').set(...bearer(owner.token)).send({ ...OIDC_CONNECTION, name: `${label} ${i}`, roleMappings });
      expect([role.status, connection.status]).toEqual([201, 201]);
      out.push({ connectionId: connection.body.item.id, roleId: role.body.item.id, key: role.body.item.key });
    }
    return out;
  };
  /** Each connection given its role while the role is deleted, on the other app; then no mapping names a missing role. */
  const race = async (list: { connectionId: string; roleId: string; key: string }[], reassignTo?: string) => {
    const answers = await Promise.all(
      list.flatMap(({ connectionId, roleId, key }, i) => [
        via(i).patch(`/v1/sso/connections/${connectionId}`).set(...bearer(owner.token)).send({ roleMappings: [{ group: 'g', role: key }] }),
        via(i + 1).delete(`/v1/roles/${roleId}`).query(reassignTo ? { reassignTo } : {}).set(...bearer(owner.token)),
      ]),
    );
    const outcomes = answers.map((r) => `${r.status} ${r.body?.error ?? ''}`.trim());
    expect(outcomes.filter((o) => !['200', '400 invalid_request', '204', '409 role_in_use'].includes(o))).toEqual([]);
    const roleKeys = new Set((await t.db.selectFrom('organization_roles').select('key').where('organization_id', '=', owner.organizationId).execute()).map((r) => r.key));
    for (const { connectionId } of list) {
      const row = await t.db.selectFrom('sso_connections').select('role_mappings').where('id', '=', connectionId).executeTakeFirstOrThrow();
      for (const mapping of row.role_mappings) expect(roleKeys).toContain(mapping.role);
    }
  };

  it('without reassignTo: no connection is left naming a missing role', async () => {
    await race(await pairs('race', false));
  });

  it('with reassignTo, on connections that already map the role: no deadlock, no missing role', async () => {
    await race(await pairs('moved', true), 'member');
  });
});
