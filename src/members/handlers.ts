import type { HandlerMap, SessionLoaders } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as members from './service';

export const memberHandlers: HandlerMap<'listMembers' | 'changeMemberRole' | 'removeMember' | 'transferOwnership'> = {
  listMembers: async (ctx) => ({ status: 200, body: await members.listMembers(ctx.deps, membershipOf(ctx), ctx.query) }),

  changeMemberRole: async (ctx) => {
    const item = await members.changeRole(ctx.deps, membershipOf(ctx), ctx.params.memberId, ctx.body.role);
    return { status: 200, body: { ok: true, item } };
  },

  transferOwnership: async (ctx) => {
    const principal = principalOf(ctx);
    const item = await members.transferOwnership(ctx.deps, principal, membershipOf(ctx), ctx.params.memberId);
    return { status: 200, body: { ok: true, item } };
  },

  removeMember: async (ctx) => {
    // A worker's own token borrows its creator's membership; it never "leaves" for them (docs/workers-and-usage.md#workers-as-oauth-clients).
    const worker = principalOf(ctx).worker;
    await members.removeMember(ctx.deps, membershipOf(ctx), ctx.params.memberId, { mayLeave: !worker || worker.delegated });
    return { status: 204, body: undefined };
  },
};

/** A page of GET /v1/members is read in the session query (src/members/service.ts). */
export const memberSessionLoaders: SessionLoaders = { listMembers: members.loadSessionWithMembersPage };
