import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, signUp, uniqueEmail, type OrgOwner } from '../support/factories';
import { invitationTokenFor } from '../support/mailbox';

/**
 * An invitation admits its bearer only while its sender may still give what it offers
 * (docs/people-and-roles.md#invitations): re-checked at acceptance, with or without a session; one
 * that fails is cancelled (audited) and answered as a cancelled one.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function invitedBy(owner: OrgOwner, role: 'admin' | 'member') {
  const admin = await addMember(t, owner.organizationId, 'admin');
  const email = uniqueEmail('invitee');
  const created = await t.http.post('/v1/invitations').set(...bearer(admin.token)).send({ email, role });
  expect(created.status).toBe(201);
  return { admin, email, invitationId: created.body.item.id as string, token: await invitationTokenFor(t, email) };
}

async function statusOf(owner: OrgOwner, invitationId: string): Promise<string> {
  const list = await t.http.get('/v1/invitations').set(...bearer(owner.token));
  return list.body.items.find((i: { id: string }) => i.id === invitationId)?.status;
}

describe('an invitation whose inviter lost the right', () => {
  it('sent by an admin who was then removed: refused at acceptance by token alone, cancelled and audited', async () => {
    const owner = await createOrganization(t, 'Removed inviter');
    const { admin, email, invitationId, token } = await invitedBy(owner, 'admin');
    expect((await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(owner.token))).status).toBe(204);

    // Before: 201, an admin of the organization from a removed admin's invitation.
    const res = await t.http.post('/v1/invitations/accept').send({ token, name: 'Bearer', password: PASSWORD });
    expect([res.status, res.body.error]).toEqual([409, 'invitation_not_pending']);
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
    expect(await statusOf(owner, invitationId)).toBe('cancelled');
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'invitation.cancelled' }).set(...bearer(owner.token));
    expect(audit.body.items).toEqual([
      expect.objectContaining({ actor: expect.objectContaining({ type: 'system' }), target: { type: 'invitation', id: invitationId }, changes: expect.objectContaining({ reason: { from: null, to: 'inviter_lost_the_right' } }) }),
    ]);
  });

  it('sent by an admin since demoted to member: refused for a signed-in invitee too', async () => {
    const owner = await createOrganization(t, 'Demoted inviter');
    const { admin, email, invitationId, token } = await invitedBy(owner, 'member');
    expect((await t.http.post(`/v1/members/${admin.memberId}/role`).set(...bearer(owner.token)).send({ role: 'member' })).status).toBe(200);
    const invitee = await signUp(t, 'invitee');
    await t.db.updateTable('users').set({ email, email_normalized: email }).where('id', '=', invitee.userId).execute();
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(invitee.token)).send({ token });
    expect([res.status, res.body.error]).toEqual([409, 'invitation_not_pending']);
    expect(await statusOf(owner, invitationId)).toBe('cancelled');
    const members = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(members.body.items.map((m: { email: string }) => m.email)).not.toContain(email);
  });

  it('an inviter who still may: accepted as before', async () => {
    const owner = await createOrganization(t, 'Steady inviter');
    const { token } = await invitedBy(owner, 'admin');
    const res = await t.http.post('/v1/invitations/accept').send({ token, name: 'Bearer', password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.body.member.role).toBe('admin');
  });
});
