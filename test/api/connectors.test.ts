import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
});
afterAll(() => t.close());

async function createInstance(token: string, body: Record<string, unknown> = {}) {
  const res = await t.http.post('/v1/connector-instances').set(...bearer(token)).send({ name: 'Drive', connectorType: 'gdrive', ...body });
  expect(res.status).toBe(201);
  return res.body.item as { id: string };
}

describe('connector instances', () => {
  it('creates (admin) with the exact shape, reads, patches and deletes', async () => {
    const owner = await createOrganization(t);
    const res = await t.http
      .post('/v1/connector-instances')
      .set(...bearer(owner.token))
      .send({ name: 'Drive', connectorType: 'gdrive', remoteId: 'drive-1', config: { folder: '/shared', depth: 2 } });
    expect(res.status).toBe(201);
    const now = clock.now().toISOString();
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^cin_[0-7][0-9a-z]{25}$/),
        organizationId: owner.organizationId,
        name: 'Drive',
        connectorType: 'gdrive',
        remoteId: 'drive-1',
        config: { folder: '/shared', depth: 2 },
        status: 'active',
        createdByOrgMembershipId: owner.memberId,
        createdAt: now,
        updatedAt: now,
      },
    });
    const id = res.body.item.id;
    expect((await t.http.get(`/v1/connector-instances/${id}`).set(...bearer(owner.token))).body).toEqual(res.body);
    clock.advance(1000);
    const patched = await t.http.patch(`/v1/connector-instances/${id}`).set(...bearer(owner.token)).send({ name: 'Drive 2', remoteId: null, status: 'disabled' });
    expect(patched.status).toBe(200);
    expect(patched.body.item).toMatchObject({ name: 'Drive 2', remoteId: null, status: 'disabled', updatedAt: clock.now().toISOString() });
    const list = await t.http.get('/v1/connector-instances').set(...bearer(owner.token));
    expect(list.body).toEqual({ items: [patched.body.item], nextCursor: null });
    expect((await t.http.delete(`/v1/connector-instances/${id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get(`/v1/connector-instances/${id}`).set(...bearer(owner.token))).status).toBe(404);
    expect((await t.http.get(`/v1/connector-instances/${id}/access`).set(...bearer(owner.token))).status).toBe(404);
  });

  it('needs admin to create and roles to read or change', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const denied = await t.http.post('/v1/connector-instances').set(...bearer(member.token)).send({ name: 'x', connectorType: 'y' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    const ci = await createInstance(owner.token);
    const noView = await t.http.get(`/v1/connector-instances/${ci.id}`).set(...bearer(member.token));
    expect(noView.status).toBe(403);
    expect(noView.body.reason).toBe('connector_instance_viewer_required');
    expect((await t.http.get('/v1/connector-instances').set(...bearer(member.token))).body.items).toEqual([]);
    await t.http.post(`/v1/connector-instances/${ci.id}/access`).set(...bearer(owner.token)).send({ orgWide: true, role: 'viewer' });
    expect((await t.http.get(`/v1/connector-instances/${ci.id}`).set(...bearer(member.token))).status).toBe(200);
    expect((await t.http.get('/v1/connector-instances').set(...bearer(member.token))).body.items).toHaveLength(1);
    const noEdit = await t.http.patch(`/v1/connector-instances/${ci.id}`).set(...bearer(member.token)).send({ name: 'x' });
    expect(noEdit.body.reason).toBe('connector_instance_editor_required');
    const noDelete = await t.http.delete(`/v1/connector-instances/${ci.id}`).set(...bearer(member.token));
    expect(noDelete.status).toBe(403);
    expect(noDelete.body.reason).toBe('connector_instance_manager_required');
    const noList = await t.http.get(`/v1/connector-instances/${ci.id}/access`).set(...bearer(member.token));
    expect(noList.status).toBe(403);
    expect(noList.body).toEqual({ error: 'forbidden', reason: 'connector_instance_manager_required', message: expect.any(String) });
    expect((await t.http.get('/v1/connector-instances')).status).toBe(401);
  });

  it('hides other organizations (404) and validates input (400 with paths)', async () => {
    const owner = await createOrganization(t);
    const ci = await createInstance(owner.token);
    const stranger = await createOrganization(t, 'Other');
    for (const req of [
      t.http.get(`/v1/connector-instances/${ci.id}`),
      t.http.patch(`/v1/connector-instances/${ci.id}`).send({ name: 'stolen' }),
      t.http.delete(`/v1/connector-instances/${ci.id}`),
      t.http.get(`/v1/connector-instances/${ci.id}/access`),
    ]) {
      const res = await req.set(...bearer(stranger.token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('connector_instance_not_found');
    }
    expect((await t.http.get(`/v1/connector-instances/${ci.id}`).set(...bearer(owner.token))).body.item.name).toBe('Drive');
    for (const badId of [newId('marketplace'), `${ci.id}a`, 'cin_0123']) {
      const res = await t.http.get(`/v1/connector-instances/${badId}/access`).set(...bearer(owner.token));
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toEqual(['path', 'connectorInstanceId']);
    }
    const post = (body: Record<string, unknown>) => t.http.post('/v1/connector-instances').set(...bearer(owner.token)).send(body);
    expect((await post({ name: 'n'.repeat(256), connectorType: 'x' })).body.details[0].path).toEqual(['body', 'name']);
    expect((await post({ name: 'x', connectorType: 't'.repeat(65) })).body.details[0].path).toEqual(['body', 'connectorType']);
    expect((await post({ name: 'x' })).body.details[0].path).toEqual(['body', 'connectorType']);
    expect((await post({ name: 'x', connectorType: 'y', secret: 1 })).body.details[0].path).toEqual(['body', 'secret']);
  });
});
