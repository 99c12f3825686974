import type { AccessTokenLoaders, HandlerMap, SessionLoaders } from '../contract';
import { membershipOf, principalOf, userIdOf } from '../access/roles';
import { Forbidden } from '../lib/errors';
import * as org from './service';
import * as lifecycle from './lifecycle';

export const orgHandlers: HandlerMap<'getOrg' | 'createOrg' | 'updateOrg' | 'deleteOrg' | 'restoreOrg'> = {
  getOrg: async (ctx) => {
    const membership = membershipOf(ctx);
    // A worker's own token is no member: there is no "current member" to describe (docs/workers-and-usage.md#workers-as-oauth-clients).
    if (membership.borrowed) throw new Forbidden('org_member_required', "A worker's own token acts for no member: GET /v1/org describes a member's organization (use a session, or a token acting for a member).");
    return { status: 200, body: await org.getOrganizationContext(ctx.deps, membership) };
  },

  createOrg: async (ctx) => {
    const principal = principalOf(ctx);
    const item = await org.createOrganization(ctx.deps, { name: ctx.body.name, userId: userIdOf(principal), sessionId: principal.sessionId });
    return { status: 201, body: { ok: true, item } };
  },

  updateOrg: async (ctx) => ({ status: 200, body: { ok: true, item: await org.renameOrganization(ctx.deps, membershipOf(ctx), ctx.body.name) } }),

  deleteOrg: async (ctx) => {
    const { purgeAt } = await lifecycle.scheduleDeletion(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body.confirm);
    return { status: 202, body: { ok: true, item: { status: 'deletion_scheduled', purgeAt: purgeAt.toISOString() } } };
  },

  restoreOrg: async (ctx) => ({ status: 200, body: { ok: true, item: await lifecycle.restoreOrganization(ctx.deps, principalOf(ctx), membershipOf(ctx)) } }),
};

/** GET /v1/org reads its whole context in the session query (src/org/service.ts). */
export const orgSessionLoaders: SessionLoaders = { getOrg: org.loadSessionWithOrganization };

/** And in an access token's statement. */
export const orgAccessTokenLoaders: AccessTokenLoaders = { getOrg: org.loadAccessTokenWithOrganization };
