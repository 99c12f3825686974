import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, signUp, type OrgOwner } from '../support/factories';
import { snapshot, snapshotDiff } from '../support/snapshot';
import type { ManualClock } from '../support/clock';
import { PERMISSION_KEYS } from '../../src/access/permissions';
import { enterpriseOrganization, OIDC_CONNECTION, SAML_CONNECTION } from '../support/sso';
import { invitationTokenFor } from '../support/mailbox';

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
});
afterAll(() => t.close());

const FIFTEEN_MINUTES = 15 * 60_000;

async function createRole(token: string, body: Record<string, unknown>) {
  return t.http.post('/v1/roles').set(...bearer(token)).send({ name: 'Custom', permissions: [], ...body });
}

async function roleOf(owner: OrgOwner, key: string, permissions: string[]): Promise<{ id: string; key: string }> {
  const res = await createRole(owner.token, { key, permissions });
  expect(res.status).toBe(201);
  return res.body.item;
}

/** A member of the organization holding `key` (set through the API by the owner). */
async function memberWithRole(owner: OrgOwner, key: string) {
  const member = await addMember(t, owner.organizationId);
  const res = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: key });
  expect(res.status).toBe(200);
  return member;
}

async function unchanged<T>(run: () => Promise<T>): Promise<T> {
  const before = await snapshot(t.db, { exclude: ['rate_limits'] });
  const result = await run();
  expect(snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }))).toEqual([]);
  return result;
}

describe('GET /v1/permissions', () => {
  it('lists the whole catalogue to any member', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const res = await t.http.get('/v1/permissions').set(...bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.items.map((p: { key: string }) => p.key)).toEqual(PERMISSION_KEYS);
    expect(res.body.items.every((p: { description: string }) => p.description.length > 0)).toBe(true);
  });
});

describe('built-in roles', () => {
  it('lists owner, admin and member with their permissions and member counts', async () => {
    const owner = await createOrganization(t);
    await addMember(t, owner.organizationId, 'admin');
    await addMember(t, owner.organizationId);
    await addMember(t, owner.organizationId);
    const res = await t.http.get('/v1/roles').set(...bearer(owner.token));
    expect(res.status).toBe(200);
    const byKey = Object.fromEntries(res.body.items.map((r: { key: string }) => [r.key, r]));
    expect(Object.keys(byKey).sort()).toEqual(['admin', 'member', 'owner']);
    expect(byKey.owner).toMatchObject({ builtIn: true, memberCount: 1, permissions: PERMISSION_KEYS });
    expect(byKey.admin.memberCount).toBe(1);
    expect(byKey.member.memberCount).toBe(2);
    expect(byKey.member.permissions).toEqual(['members.read', 'teams.read', 'mcpConnections.use']);
    expect(byKey.admin.permissions).toContain('roles.manage');
  });

  it('cannot be changed or deleted (409 builtin_role_immutable, nothing written)', async () => {
    const owner = await createOrganization(t);
    const roles = (await t.http.get('/v1/roles').set(...bearer(owner.token))).body.items as { id: string; key: string }[];
    for (const role of roles) {
      await unchanged(async () => {
        const patch = await t.http.patch(`/v1/roles/${role.id}`).set(...bearer(owner.token)).send({ name: 'Renamed' });
        expect([patch.status, patch.body.error]).toEqual([409, 'builtin_role_immutable']);
        const del = await t.http.delete(`/v1/roles/${role.id}`).set(...bearer(owner.token));
        expect([del.status, del.body.error]).toEqual([409, 'builtin_role_immutable']);
      });
    }
  });
});

describe('custom roles', () => {
  it('are created, read, listed with memberCount, updated and deleted', async () => {
    const owner = await createOrganization(t);
    const created = await createRole(owner.token, { key: 'auditor', name: 'Auditor', description: 'Reads analytics', permissions: ['analytics.read', 'members.read'] });
    expect(created.status).toBe(201);
    expect(created.body.item).toMatchObject({ key: 'auditor', name: 'Auditor', description: 'Reads analytics', builtIn: false, memberCount: 0 });
    expect(created.body.item.permissions.sort()).toEqual(['analytics.read', 'members.read']);
    const id = created.body.item.id as string;
    expect(id).toMatch(/^rol_/);

    const member = await memberWithRole(owner, 'auditor');
    const got = await t.http.get(`/v1/roles/${id}`).set(...bearer(member.token));
    expect(got.body.item.memberCount).toBe(1);
    const listed = await t.http.get('/v1/roles').set(...bearer(member.token));
    expect(listed.body.items.find((r: { id: string }) => r.id === id).memberCount).toBe(1);

    const patched = await t.http.patch(`/v1/roles/${id}`).set(...bearer(owner.token)).send({ name: 'Auditors', permissions: ['analytics.read'] });
    expect(patched.status).toBe(200);
    expect(patched.body.item).toMatchObject({ key: 'auditor', name: 'Auditors', permissions: ['analytics.read'] });

    const inUse = await t.http.delete(`/v1/roles/${id}`).set(...bearer(owner.token));
    expect([inUse.status, inUse.body.error]).toEqual([409, 'role_in_use']);
    const moved = await t.http.delete(`/v1/roles/${id}?reassignTo=member`).set(...bearer(owner.token));
    expect(moved.status).toBe(204);
    expect((await t.http.get(`/v1/roles/${id}`).set(...bearer(owner.token))).status).toBe(404);
    const members = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(members.body.items.find((m: { id: string }) => m.id === member.memberId).role).toBe('member');
  });

  it('apply a permission change on the member’s next request', async () => {
    const owner = await createOrganization(t);
    const role = await roleOf(owner, 'team-lead', []);
    const lead = await memberWithRole(owner, 'team-lead');
    const denied = await t.http.post('/v1/teams').set(...bearer(lead.token)).send({ name: 'Alpha' });
    expect([denied.status, denied.body.reason]).toEqual([403, 'org_admin_required']);
    expect(denied.body.message).toContain('teams.manage');
    await t.http.patch(`/v1/roles/${role.id}`).set(...bearer(owner.token)).send({ permissions: ['teams.manage'] });
    expect((await t.http.post('/v1/teams').set(...bearer(lead.token)).send({ name: 'Alpha' })).status).toBe(201);
    const perms = await t.http.get(`/v1/members/${lead.memberId}/permissions`).set(...bearer(lead.token));
    expect(perms.body.items).toEqual(['teams.manage']);
    await t.http.patch(`/v1/roles/${role.id}`).set(...bearer(owner.token)).send({ permissions: [] });
    expect((await t.http.post('/v1/teams').set(...bearer(lead.token)).send({ name: 'Beta' })).status).toBe(403);
  });

  it('is assignable through an invitation', async () => {
    const owner = await createOrganization(t);
    await roleOf(owner, 'reader', ['members.read']);
    const user = await signUp(t, 'invitee');
    const invite = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: user.email, role: 'reader' });
    expect(invite.status).toBe(201);
    expect(invite.body.item.role).toBe('reader');
    const accept = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: await invitationTokenFor(t, user.email) });
    expect(accept.status).toBe(200);
    expect(accept.body.member.role).toBe('reader');
  });

  it('refuses bad input with 4xx and writes nothing', async () => {
    const owner = await createOrganization(t);
    await roleOf(owner, 'taken', []);
    const cases: [Record<string, unknown>, number, string, string[]?][] = [
      [{ key: 'ok-key', permissions: ['members.read', 'nope.unknown'] }, 400, 'invalid_request', ['body', 'permissions', '1']],
      [{ key: 'ok-key', permissions: ['not a key'] }, 400, 'invalid_request', ['body', 'permissions', '0']],
      [{ key: 'Bad Key', permissions: [] }, 400, 'invalid_request', ['body', 'key']],
      [{ key: 'x', permissions: [] }, 400, 'invalid_request', ['body', 'key']],
      [{ key: 'ok-key', permissions: ['members.read', 'members.read'] }, 400, 'invalid_request', ['body', 'permissions']],
      [{ key: 'ok-key', permissions: Array.from({ length: 201 }, () => 'members.read') }, 400, 'invalid_request', ['body', 'permissions']],
      [{ key: 'taken', permissions: [] }, 409, 'role_key_taken'],
      [{ key: 'admin', permissions: [] }, 409, 'role_key_taken'],
      [{ key: 'owner', permissions: [] }, 409, 'role_key_taken'],
    ];
    for (const [body, status, error, path] of cases) {
      await unchanged(async () => {
        const res = await createRole(owner.token, body);
        expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status, error });
        if (path) expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
      });
    }
    const member = await addMember(t, owner.organizationId);
    for (const role of ['owner', 'no-such-role']) {
      await unchanged(async () => {
        const res = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role });
        expect(res.status).toBe(400);
        expect(res.body.details[0].path).toEqual(['body', 'role']);
        const invite = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: 'someone@example.test', role });
        expect(invite.status).toBe(400);
        expect(invite.body.details[0].path).toEqual(['body', 'role']);
      });
    }
    const taken = await roleOf(owner, 'doomed', []);
    for (const reassignTo of ['owner', 'doomed', 'missing-role']) {
      await memberWithRole(owner, 'doomed');
      await unchanged(async () => {
        const res = await t.http.delete(`/v1/roles/${taken.id}`).query({ reassignTo }).set(...bearer(owner.token));
        expect({ reassignTo, status: res.status, path: res.body.details?.[0]?.path }).toEqual({ reassignTo, status: 400, path: ['query', 'reassignTo'] });
      });
    }
  });

  it('is 404 to another organization on every role route, and its keys cannot be assigned', async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const secret = await roleOf(a, 'a-only', ['members.read']);
    const builtIn = (await t.http.get('/v1/roles').set(...bearer(a.token))).body.items[0] as { id: string };
    for (const id of [secret.id, builtIn.id]) {
      await unchanged(async () => {
        expect((await t.http.get(`/v1/roles/${id}`).set(...bearer(b.token))).status).toBe(404);
        expect((await t.http.patch(`/v1/roles/${id}`).set(...bearer(b.token)).send({ name: 'x' })).status).toBe(404);
        expect((await t.http.delete(`/v1/roles/${id}`).set(...bearer(b.token))).status).toBe(404);
      });
    }
    const bMember = await addMember(t, b.organizationId);
    await unchanged(async () => {
      const res = await t.http.post(`/v1/members/${bMember.memberId}/role`).set(...bearer(b.token)).send({ role: 'a-only' });
      expect([res.status, res.body.details[0].path]).toEqual([400, ['body', 'role']]);
      expect((await t.http.get(`/v1/members/${a.memberId}/permissions`).set(...bearer(b.token))).status).toBe(404);
    });
  });
});

describe('roles given by SSO connections', () => {
  const connection = async (owner: OrgOwner, body: Record<string, unknown>) => {
    const res = await t.http.post('/v1/sso/connections').set(...bearer(owner.token)).send(body);
    expect(res.status).toBe(201);
    return res.body.item.id as string;
  };
  const connectionRoles = async (owner: OrgOwner, id: string) => {
    const res = await t.http.get(`/v1/sso/connections/${id}`).set(...bearer(owner.token));
    return { defaultRole: res.body.item.defaultRole, roleMappings: res.body.item.roleMappings };
  };

  it('a role a connection maps a group to, or gives by default, is in use: 409, nothing changes', async () => {
    const owner = await enterpriseOrganization(t);
    const mappedRole = await roleOf(owner, 'engineer', ['members.read']);
    const defaultRole = await roleOf(owner, 'contractor', []);
    await connection(owner, { ...OIDC_CONNECTION, roleMappings: [{ group: 'eng', role: 'engineer' }] });
    await connection(owner, { ...SAML_CONNECTION, defaultRole: 'contractor' });
    for (const role of [mappedRole, defaultRole]) {
      await unchanged(async () => {
        const res = await t.http.delete(`/v1/roles/${role.id}`).set(...bearer(owner.token));
        expect([res.status, res.body.error]).toEqual([409, 'role_in_use']);
        expect(res.body.message).toContain('1 SSO connection');
      });
    }
  });

  it('reassignTo moves the mappings and the default role in the same transaction (audited)', async () => {
    const owner = await enterpriseOrganization(t);
    const role = await roleOf(owner, 'engineer', ['members.read']);
    const oidc = await connection(owner, { ...OIDC_CONNECTION, defaultRole: 'engineer', roleMappings: [{ group: 'eng', role: 'engineer' }, { group: 'ops', role: 'admin' }, { group: 'eng-leads', role: 'engineer' }] });
    const saml = await connection(owner, { ...SAML_CONNECTION, roleMappings: [{ group: 'admins', role: 'admin' }] });
    const res = await t.http.delete(`/v1/roles/${role.id}`).query({ reassignTo: 'member' }).set(...bearer(owner.token));
    expect(res.status).toBe(204);
    expect(await connectionRoles(owner, oidc)).toEqual({
      defaultRole: 'member',
      roleMappings: [{ group: 'eng', role: 'member' }, { group: 'ops', role: 'admin' }, { group: 'eng-leads', role: 'member' }],
    });
    expect(await connectionRoles(owner, saml)).toEqual({ defaultRole: 'member', roleMappings: [{ group: 'admins', role: 'admin' }] });
    const audit = await t.db.selectFrom('audit_logs').select('changes').where('organization_id', '=', owner.organizationId).where('action', '=', 'role.deleted').executeTakeFirstOrThrow();
    expect(audit.changes).toMatchObject({ reassignedTo: { from: 'member' }, connectionsReassigned: { from: 1 } });
  });

  it('a target role holding permissions the caller lacks: 403 permission_not_held, the mappings stay', async () => {
    const owner = await enterpriseOrganization(t);
    const doomed = await roleOf(owner, 'doomed', []);
    const id = await connection(owner, { ...OIDC_CONNECTION, roleMappings: [{ group: 'g', role: 'doomed' }] });
    await roleOf(owner, 'role-managers', ['roles.manage']);
    await roleOf(owner, 'strong', ['roles.manage', 'teams.manage']);
    const manager = await memberWithRole(owner, 'role-managers');
    await unchanged(async () => {
      const res = await t.http.delete(`/v1/roles/${doomed.id}`).query({ reassignTo: 'strong' }).set(...bearer(manager.token));
      expect([res.status, res.body.reason]).toEqual([403, 'permission_not_held']);
    });
    expect((await connectionRoles(owner, id)).roleMappings).toEqual([{ group: 'g', role: 'doomed' }]);
  });
});

describe('no escalation (403 permission_not_held, nothing written)', () => {
  it('an admin-equivalent custom role cannot make itself owner', async () => {
    const owner = await createOrganization(t);
    const adminLike = PERMISSION_KEYS.filter((k) => k !== 'apiKeys.manage');
    await roleOf(owner, 'almost-admin', adminLike);
    const boss = await memberWithRole(owner, 'almost-admin');
    await unchanged(async () => {
      const self = await t.http.post(`/v1/members/${boss.memberId}/role`).set(...bearer(boss.token)).send({ role: 'owner' });
      expect(self.status).toBe(400);
      const transfer = await t.http.post(`/v1/members/${boss.memberId}/transfer-ownership`).set(...bearer(boss.token));
      expect([transfer.status, transfer.body.reason]).toEqual([403, 'owner_required']);
      const admin = await t.http.post(`/v1/members/${boss.memberId}/role`).set(...bearer(boss.token)).send({ role: 'admin' });
      expect([admin.status, admin.body.reason]).toEqual([403, 'permission_not_held']);
      expect(admin.body.message).toContain('apiKeys.manage');
    });
  });

  it('a member with members.changeRole cannot assign a role stronger than their own', async () => {
    const owner = await createOrganization(t);
    await roleOf(owner, 'role-changer', ['members.changeRole', 'members.read']);
    await roleOf(owner, 'strong', ['members.changeRole', 'members.read', 'teams.manage']);
    await roleOf(owner, 'weak', ['members.read']);
    await roleOf(owner, 'weakest', []);
    const changer = await memberWithRole(owner, 'role-changer');
    // A member whose permissions are all the changer's (else no role change at all: 403 member_permissions_not_held).
    const other = await memberWithRole(owner, 'weak');
    await unchanged(async () => {
      for (const role of ['strong', 'admin']) {
        const res = await t.http.post(`/v1/members/${other.memberId}/role`).set(...bearer(changer.token)).send({ role });
        expect([res.status, res.body.reason]).toEqual([403, 'permission_not_held']);
      }
      const invite = await t.http.post('/v1/invitations').set(...bearer(changer.token)).send({ email: 'x@example.test', role: 'weak' });
      expect([invite.status, invite.body.reason]).toEqual([403, 'org_admin_required']);
    });
    expect((await t.http.post(`/v1/members/${other.memberId}/role`).set(...bearer(changer.token)).send({ role: 'weakest' })).status).toBe(200);
  });

  it('a role cannot edit itself to add what its holder lacks', async () => {
    const owner = await createOrganization(t);
    const managers = await roleOf(owner, 'role-managers', ['roles.manage']);
    const holder = await memberWithRole(owner, 'role-managers');
    await unchanged(async () => {
      const res = await t.http.patch(`/v1/roles/${managers.id}`).set(...bearer(holder.token)).send({ permissions: ['roles.manage', 'members.changeRole'] });
      expect([res.status, res.body.reason]).toEqual([403, 'permission_not_held']);
      const create = await createRole(holder.token, { key: 'sneaky', permissions: ['apiKeys.manage'] });
      expect([create.status, create.body.reason]).toEqual([403, 'permission_not_held']);
    });
    const plain = await roleOf(owner, 'plain', ['members.read']);
    const reader = await memberWithRole(owner, 'plain');
    await unchanged(async () => {
      const res = await t.http.patch(`/v1/roles/${plain.id}`).set(...bearer(reader.token)).send({ permissions: ['members.read', 'roles.manage'] });
      expect([res.status, res.body.reason]).toEqual([403, 'permission_required']);
      expect(res.body.message).toContain('roles.manage');
    });
  });

  it('an API key cannot be scoped beyond its creator, and loses what the creator loses', async () => {
    const owner = await createOrganization(t);
    const keyRole = await roleOf(owner, 'key-maker', ['apiKeys.manage', 'teams.manage', 'teams.read']);
    const maker = await memberWithRole(owner, 'key-maker');
    await unchanged(async () => {
      const res = await t.http.post('/v1/api-keys').set(...bearer(maker.token)).send({ name: 'k', permissions: ['teams.read', 'analytics.read'] });
      expect([res.status, res.body.reason]).toEqual([403, 'permission_not_held']);
      const unknown = await t.http.post('/v1/api-keys').set(...bearer(maker.token)).send({ name: 'k', permissions: ['teams.read', 'x.y'] });
      expect([unknown.status, unknown.body.details[0].path]).toEqual([400, ['body', 'permissions', '1']]);
    });
    const scoped = await t.http.post('/v1/api-keys').set(...bearer(maker.token)).send({ name: 'k', permissions: ['teams.read', 'teams.manage'] });
    expect(scoped.status).toBe(201);
    expect(scoped.body.item.permissions).toEqual(['teams.read', 'teams.manage']);
    const key = { 'x-api-key': scoped.body.key as string };
    expect((await t.http.post('/v1/teams').set(key).send({ name: 'By key' })).status).toBe(201);
    // Outside the scope although the creator holds it.
    const outside = await t.http.get('/v1/api-keys').set(key);
    expect([outside.status, outside.body.reason]).toEqual([403, 'org_admin_required']);
    // The creator loses teams.manage: so does the key, at once.
    await t.http.patch(`/v1/roles/${keyRole.id}`).set(...bearer(owner.token)).send({ permissions: ['apiKeys.manage', 'teams.read'] });
    expect((await t.http.post('/v1/teams').set(key).send({ name: 'Again' })).status).toBe(403);
    expect((await t.http.get('/v1/teams').set(key)).status).toBe(200);
    const unscoped = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'all' });
    expect(unscoped.body.item.permissions).toBeNull();
  });
});

describe('fresh sessions', () => {
  it('need a recent sign-in for role writes, key creation and transfer; reauthenticate renews it', async () => {
    const owner = await createOrganization(t);
    const target = await addMember(t, owner.organizationId, 'admin');
    clock.advance(FIFTEEN_MINUTES + 1_000);
    await unchanged(async () => {
      const checks = [
        await createRole(owner.token, { key: 'late', permissions: [] }),
        await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'late' }),
        await t.http.post(`/v1/members/${target.memberId}/transfer-ownership`).set(...bearer(owner.token)),
      ];
      expect(checks.map((r) => [r.status, r.body.reason])).toEqual(Array(3).fill([403, 'fresh_session_required']));
    });
    const wrong = await t.http.post('/v1/auth/reauthenticate').set(...bearer(owner.token)).send({ password: 'wrong password' });
    expect([wrong.status, wrong.body.error]).toEqual([401, 'invalid_credentials']);
    const renewed = await t.http.post('/v1/auth/reauthenticate').set(...bearer(owner.token)).send({ password: PASSWORD });
    expect(renewed.status).toBe(200);
    expect(renewed.body.authenticatedAt).toBe(clock.now().toISOString());
    expect((await createRole(owner.token, { key: 'late', permissions: [] })).status).toBe(201);
  });

  it('never pass with an API key, and reauthenticate is rate limited like sign-in', async () => {
    const owner = await createOrganization(t);
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' })).body.key as string;
    expect((await t.http.post('/v1/roles').set('x-api-key', key).send({ key: 'by-key', name: 'x', permissions: [] })).status).toBe(401);
    expect((await t.http.post('/v1/auth/reauthenticate').set('x-api-key', key).send({ password: PASSWORD })).status).toBe(401);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await t.http.post('/v1/auth/reauthenticate').set(...bearer(owner.token)).send({ password: `wrong ${i}` })).status);
    expect(statuses).toContain(429);
    const limited = await t.http.post('/v1/auth/reauthenticate').set(...bearer(owner.token)).send({ password: PASSWORD });
    expect(limited.status).toBe(429);
  });
});

describe('ownership transfer', () => {
  it('makes the target owner and the previous owner admin', async () => {
    const owner = await createOrganization(t);
    const next = await addMember(t, owner.organizationId);
    const res = await t.http.post(`/v1/members/${next.memberId}/transfer-ownership`).set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body.item).toMatchObject({ id: next.memberId, role: 'owner' });
    const org = await t.http.get('/v1/org').set(...bearer(next.token));
    expect(org.body.organization.owner.memberId).toBe(next.memberId);
    const members = (await t.http.get('/v1/members').set(...bearer(next.token))).body.items as { id: string; role: string }[];
    expect(members.find((m) => m.id === owner.memberId)!.role).toBe('admin');
    // The previous owner is no longer owner.
    const back = await t.http.post(`/v1/members/${owner.memberId}/transfer-ownership`).set(...bearer(owner.token));
    expect([back.status, back.body.reason]).toEqual([403, 'owner_required']);
    const self = await t.http.post(`/v1/members/${next.memberId}/transfer-ownership`).set(...bearer(next.token));
    expect([self.status, self.body.error]).toEqual([409, 'already_owner']);
  });

  it('keeps exactly one owner under concurrent transfers', async () => {
    const owner = await createOrganization(t);
    const candidates = await Promise.all(Array.from({ length: 4 }, () => addMember(t, owner.organizationId)));
    const answers = await Promise.all(candidates.map((c) => t.http.post(`/v1/members/${c.memberId}/transfer-ownership`).set(...bearer(owner.token))));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of answers.filter((a) => a.status !== 200)) expect([r.status, r.body.reason]).toEqual([403, 'owner_required']);
    const owners = await t.db.selectFrom('members').select('id').where('organization_id', '=', owner.organizationId).where('role', '=', 'owner').where('removed_at', 'is', null).execute();
    expect(owners).toHaveLength(1);
    expect(owners[0]!.id).toBe(answers.find((r) => r.status === 200)!.body.item.id);
  });
});
