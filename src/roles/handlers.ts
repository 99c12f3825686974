import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as roles from './service';

type RoleOperations = 'listPermissions' | 'listRoles' | 'getRole' | 'createRole' | 'updateRole' | 'deleteRole' | 'getMemberPermissions';

export const roleHandlers: HandlerMap<RoleOperations> = {
  listPermissions: async (ctx) => {
    membershipOf(ctx);
    return { status: 200, body: roles.listPermissions() };
  },

  listRoles: async (ctx) => ({ status: 200, body: await roles.listRoles(ctx.deps, membershipOf(ctx), ctx.query) }),

  getRole: async (ctx) => ({ status: 200, body: { ok: true, item: await roles.getRole(ctx.deps, membershipOf(ctx), ctx.params.roleId) } }),

  createRole: async (ctx) => {
    const principal = principalOf(ctx);
    return { status: 201, body: { ok: true, item: await roles.createRole(ctx.deps, principal, membershipOf(ctx), ctx.body) } };
  },

  updateRole: async (ctx) => {
    const principal = principalOf(ctx);
    return { status: 200, body: { ok: true, item: await roles.updateRole(ctx.deps, principal, membershipOf(ctx), ctx.params.roleId, ctx.body) } };
  },

  deleteRole: async (ctx) => {
    const principal = principalOf(ctx);
    await roles.deleteRole(ctx.deps, principal, membershipOf(ctx), ctx.params.roleId, ctx.query.reassignTo);
    return { status: 204, body: undefined };
  },

  getMemberPermissions: async (ctx) => ({
    status: 200,
    body: { items: await roles.memberPermissions(ctx.deps, membershipOf(ctx), ctx.params.memberId) },
  }),
};
