// The dogfood scenario: what a client team writes with @org-control-plane/client, and nothing else
// (no supertest, no test helpers). client.test.ts runs it against a real service process, and
// compiles this file with `tsc --strict --noUncheckedIndexedAccess --exactOptionalPropertyTypes`
// (test/client/tsconfig.json) and refuses casts, `any` and non-null assertions in it: the
// package's types must carry the whole scenario on their own.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from '@jest/globals';
import { ApiError, assertNever, createApiClient, paginate, unwrap, type ApiClient, type Schema } from '@org-control-plane/client';

export interface World {
  baseUrl: string;
  /** The invitation token from the link in the message mailed to `email`. */
  invitationToken(email: string): Promise<string>;
}

export interface ScenarioResult {
  admin: ApiClient;
  teamName: string;
  grants: Schema<'AccessGrant'>[];
}

const PASSWORD = 'correct horse battery staple';

export async function fullScenario(world: World): Promise<ScenarioResult> {
  const anonymous = createApiClient({ baseUrl: world.baseUrl });

  // Bootstrap: the platform admin and its first organization, with a session.
  const boot = await unwrap(
    anonymous.POST('/v1/bootstrap', { body: { email: 'admin@dogfood.example', password: PASSWORD, name: 'Ada Admin', organizationName: 'Dogfood Inc' } }),
  );
  expect(boot.ok).toBe(true);
  expect(boot.user.email).toBe('admin@dogfood.example');
  expect(boot.organization.name).toBe('Dogfood Inc');
  expect(boot.member.role).toBe('owner');
  const admin = anonymous.withCredential({ sessionToken: boot.session.token });

  // A second organization: the session switches to it.
  const created = await unwrap(admin.POST('/v1/org', { body: { name: 'Dogfood Labs' } }));
  expect(created.item.name).toBe('Dogfood Labs');
  const context = await unwrap(admin.GET('/v1/org'));
  expect(context.organization.id).toBe(created.item.id);
  expect(context.currentMember.role).toBe('owner');

  // A team.
  const teamName = 'Platform';
  const team = (await unwrap(admin.POST('/v1/teams', { body: { name: teamName } }))).item;
  expect(team.name).toBe(teamName);
  expect(team.memberCount).toBe(0);

  // An API key acts as its creator: the same list through it (sent as x-api-key).
  const key = await unwrap(admin.POST('/v1/api-keys', { body: { name: 'Dogfood CI' } }));
  expect(key.item.name).toBe('Dogfood CI');
  const byKey = anonymous.withCredential({ apiKey: key.key });
  const teamNames: string[] = [];
  for await (const listed of paginate(byKey, '/v1/teams')) teamNames.push(listed.name);
  expect(teamNames).toEqual([teamName]);

  // Invite a person; the token reaches only their mailbox.
  const inviteeEmail = 'grace@dogfood.example';
  const invitation = (await unwrap(admin.POST('/v1/invitations', { body: { email: inviteeEmail, role: 'member' } }))).item;
  expect(invitation.email).toBe(inviteeEmail);
  expect(invitation.status).toBe('pending');
  const token = await world.invitationToken(inviteeEmail);
  const preview = await unwrap(anonymous.GET('/v1/invitations/preview', { params: { query: { token } } }));
  expect(preview.email).toBe(inviteeEmail);

  // They sign up, then accept with their session.
  const signedUp = await unwrap(anonymous.POST('/v1/auth/sign-up', { body: { email: inviteeEmail, password: PASSWORD, name: 'Grace Member' } }));
  expect(signedUp.user.email).toBe(inviteeEmail);
  const invitee = anonymous.withCredential({ sessionToken: signedUp.session.token });
  const accepted = await invitee.POST('/v1/invitations/accept', { body: { token } });
  if (accepted.error !== undefined) throw accepted.error;
  expect(accepted.response.status).toBe(200);
  const membership = 'member' in accepted.data ? accepted.data.member : undefined;
  expect(membership?.organizationId).toBe(created.item.id);
  expect(membership?.role).toBe('member');
  if (membership === undefined) throw new Error('the acceptance answered no membership');
  const joined = await unwrap(admin.PUT('/v1/teams/{teamId}/members/{memberId}', { params: { path: { teamId: team.id, memberId: membership.id } } }));
  expect(joined.item.memberCount).toBe(1);

  // A marketplace, and a plugin in it shared with the whole organization.
  const marketplace = (await unwrap(admin.POST('/v1/marketplaces', { body: { name: 'Internal tools' } }))).item;
  expect(marketplace.name).toBe('Internal tools');
  const plugin = (
    await unwrap(admin.POST('/v1/plugins', { body: { name: 'Release notes', description: 'Writes release notes.', marketplaceId: marketplace.id, orgWide: true } }))
  ).item;
  expect(plugin.name).toBe('Release notes');
  expect(plugin.marketplaces.map((m) => m.id)).toContain(marketplace.id);

  // Grant the team (editor) and the new member (viewer) access to the plugin.
  const teamGrant = await admin.POST('/v1/plugins/{pluginId}/access', { params: { path: { pluginId: plugin.id } }, body: { teamId: team.id, role: 'editor' } });
  if (teamGrant.error !== undefined) throw teamGrant.error;
  expect(teamGrant.response.status).toBe(201);
  expect(teamGrant.data.item.teamId).toBe(team.id);
  const memberGrant = await unwrap(
    admin.POST('/v1/plugins/{pluginId}/access', { params: { path: { pluginId: plugin.id } }, body: { orgMembershipId: membership.id, role: 'viewer' } }),
  );
  expect(memberGrant.item.orgMembershipId).toBe(membership.id);

  // Every grant, one per page, through the paginate helper.
  const grants: Schema<'AccessGrant'>[] = [];
  for await (const grant of paginate(admin, '/v1/plugins/{pluginId}/access', { params: { path: { pluginId: plugin.id }, query: { limit: 1 } } })) grants.push(grant);

  // The member sees the plugin through those grants.
  const seen = await unwrap(invitee.GET('/v1/plugins/{pluginId}', { params: { path: { pluginId: plugin.id } } }));
  expect(seen.item.id).toBe(plugin.id);
  return { admin, teamName, grants };
}

/** A second team of the same name: the 409 is narrowed from the operation's union of documented errors. */
export async function duplicateTeamError(admin: ApiClient, name: string): Promise<string> {
  const answer = await admin.POST('/v1/teams', { body: { name: name.toUpperCase() } });
  if (answer.error === undefined) throw new Error('a second team of the same name was created');
  const error = answer.error;
  expect(error).toBeInstanceOf(ApiError);
  if (!error.documented) throw new Error(`an undocumented answer: ${error.status} ${error.error ?? ''}`);
  // Exhaustive: a code the contract adds to this operation makes this switch fail to compile.
  switch (error.error) {
    case 'team_name_taken':
      expect(error.status).toBe(409);
      expect(error.body.message).toMatch(/./);
      return error.error;
    case 'invalid_request':
      return `${error.error} at ${error.details.map((d) => d.path.join('.')).join(', ')}`;
    case 'forbidden': {
      const reason = error.reason;
      switch (reason) {
        case 'email_not_verified':
        case 'mfa_enrollment_required':
        case 'org_admin_required':
        case 'organization_deleted':
        case 'sso_required':
          return `${error.error}: ${reason}`;
        default:
          return assertNever(reason);
      }
    }
    case 'unauthorized':
    case 'member_not_found':
    case 'organization_not_found':
      return error.error;
    default:
      return assertNever(error);
  }
}

export interface RetryObservation {
  status: number;
  requests: number;
  waitedMs: number;
  postRequests: number;
  postStatus: number;
  /** Requests and final status of a POST made with `retry: true`. */
  askedRequests: number;
  askedStatus: number;
}

/**
 * A tiny server that answers 429 with Retry-After: 1 to every first request and 200 to the next:
 * a GET is retried after the wait; a POST is not (not idempotent) unless the call asks.
 */
export async function retryAfter429(): Promise<RetryObservation> {
  let requests = 0;
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    requests++;
    const key = `${req.method ?? ''} ${req.url ?? ''}`;
    const count = (seen.get(key) ?? 0) + 1;
    seen.set(key, count);
    if (count % 2 === 1) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: 'rate_limited', message: 'Too many attempts.' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ bootstrapped: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address: AddressInfo | string | null = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  try {
    const api = createApiClient({ baseUrl: `http://127.0.0.1:${address.port}`, retry: { attempts: 3 } });
    const started = Date.now();
    const status = await api.GET('/v1/bootstrap/status');
    const waitedMs = Date.now() - started;
    if (status.error !== undefined) throw status.error;
    expect(status.data.bootstrapped).toBe(true);
    const before = requests;
    const signIn = { body: { email: 'someone@dogfood.example', password: PASSWORD } };
    const post = await api.POST('/v1/auth/sign-in', signIn);
    const postRequests = requests - before;
    if (post.error === undefined) throw new Error('the POST was retried');
    expect(post.error.documented).toBe(true);
    if (post.error.documented && post.error.error === 'rate_limited') expect(post.error.body.message).toBe('Too many attempts.');
    seen.clear();
    const beforeAsked = requests;
    const asked = await api.POST('/v1/auth/sign-in', { ...signIn, retry: true });
    return {
      status: status.response.status,
      requests: before,
      waitedMs,
      postRequests,
      postStatus: post.error.status,
      askedRequests: requests - beforeAsked,
      askedStatus: asked.response.status,
    };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
