import { randomBytes } from 'node:crypto';
import { newId } from '../../src/lib/ids';
import { insertMember } from '../../src/members/store';
import { markEmailVerified } from '../../src/users/service';
import type { Role } from '../../src/domain/principal';
import type { TestApp } from './app';
import { invitationTokenFor, type Mailbox } from './mailbox';

export const PASSWORD = 'correct horse battery';

export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(4).toString('hex')}@example.test`;
}

export interface SignedUpUser {
  userId: string;
  email: string;
  token: string;
}

/**
 * A user who signed up through the API, address verified through the users service's setup path
 * (tests of other features act at once; test/api/verify-email.test.ts proves addresses by mail).
 */
export async function signUp(t: TestApp, label = 'user'): Promise<SignedUpUser> {
  return signUpAs(t, uniqueEmail(label), label);
}

export async function signUpAs(t: TestApp, email: string, name: string, password = PASSWORD): Promise<SignedUpUser> {
  const res = await t.http.post('/v1/auth/sign-up').send({ email, password, name });
  if (res.status !== 201) throw new Error(`sign-up ${email} failed: ${res.status} ${JSON.stringify(res.body)}`);
  await markEmailVerified(t.db, res.body.user.id, t.clock.now());
  return { userId: res.body.user.id, email, token: res.body.session.token };
}

/** A user who signed up and has not proven the address (what the verification gate holds back). */
export async function signUpUnverified(t: TestApp, label = 'user'): Promise<SignedUpUser> {
  const email = uniqueEmail(label);
  const res = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: label });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { userId: res.body.user.id, email, token: res.body.session.token };
}

export interface OrgOwner extends SignedUpUser {
  organizationId: string;
  memberId: string;
}

/** A new user who creates an organization through the API (the session switches to it). */
export async function createOrganization(t: TestApp, name = 'Acme'): Promise<OrgOwner> {
  const user = await signUp(t, 'owner');
  const res = await t.http.post('/v1/org').set('authorization', `Bearer ${user.token}`).send({ name });
  if (res.status !== 201) throw new Error(`create org failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...user, organizationId: res.body.item.id, memberId: res.body.item.owner.memberId };
}

export interface OrgMember extends SignedUpUser {
  organizationId: string;
  memberId: string;
}

/**
 * Adds a member with the given role. Uses the members store directly (the invitation flow is
 * tested on its own); the new member's session is opened afterwards, so the organization is its
 * active one.
 */
export async function addMember(t: TestApp, organizationId: string, role: Exclude<Role, 'owner'> = 'member'): Promise<OrgMember> {
  const { userId, email } = await signUp(t, role);
  const memberId = newId('member');
  await insertMember(t.db, { id: memberId, organizationId, userId, role, now: t.clock.now() });
  const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
  return { userId, email, token: signIn.body.session.token, organizationId, memberId };
}

export function bearer(token: string): [string, string] {
  return ['authorization', `Bearer ${token}`];
}

/** An organization API key as clients send it (`x-api-key`; as a bearer token it is no credential at all). */
export function asApiKey(key: string): [string, string] {
  return ['x-api-key', key];
}

/**
 * Invites a new user through the API (as `inviter`, an admin's session token) and accepts the
 * invitation with that user's session, with the token from the mailed link (through `mailbox`
 * when the app sends to one, else through `.eml` files): the membership the invitation flow creates.
 */
export async function inviteAndAccept(t: TestApp, inviterToken: string, role: Exclude<Role, 'owner'> = 'member', mailbox?: Mailbox): Promise<OrgMember> {
  const user = await signUp(t, role);
  const invite = await t.http.post('/v1/invitations').set(...bearer(inviterToken)).send({ email: user.email, role });
  if (invite.status !== 201) throw new Error(`invite failed: ${invite.status} ${JSON.stringify(invite.body)}`);
  const token = await invitationTokenFor(t, user.email, mailbox);
  const accept = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token });
  if (accept.status !== 200) throw new Error(`accept failed: ${accept.status} ${JSON.stringify(accept.body)}`);
  return { ...user, organizationId: accept.body.member.organizationId, memberId: accept.body.member.id };
}

/** A custom marketplace created through the API by an admin's session token. */
export async function createMarketplace(t: TestApp, token: string, body: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const res = await t.http.post('/v1/marketplaces').set(...bearer(token)).send({ name: 'Team tools', ...body });
  if (res.status !== 201) throw new Error(`create marketplace failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.item;
}

/** A plugin created through the API. */
export async function createPlugin(t: TestApp, token: string, body: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const res = await t.http.post('/v1/plugins').set(...bearer(token)).send({ name: 'Helper', ...body });
  if (res.status !== 201) throw new Error(`create plugin failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.item;
}

/** A team with the given members, written directly (the team routes are tested with the people area). */
export async function createTeamDirect(t: TestApp, organizationId: string, memberIds: string[] = []): Promise<string> {
  const now = t.clock.now();
  const teamId = newId('team');
  await t.db.insertInto('teams').values({ id: teamId, organization_id: organizationId, name: `team-${teamId.slice(-6)}`, created_at: now, updated_at: now }).execute();
  if (memberIds.length > 0) {
    await t.db
      .insertInto('team_members')
      .values(memberIds.map((memberId) => ({ team_id: teamId, member_id: memberId, organization_id: organizationId, created_at: now })))
      .execute();
  }
  return teamId;
}
