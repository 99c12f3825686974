import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as authorizations from './service';

type AuthorizationOperations = 'listMyAuthorizations' | 'revokeMyAuthorization' | 'listOAuthAuthorizations' | 'revokeOAuthAuthorization' | 'getOAuthPolicy' | 'putOAuthPolicy';

export const authorizationHandlers: HandlerMap<AuthorizationOperations> = {
  listMyAuthorizations: async (ctx) => ({ status: 200, body: await authorizations.listMine(ctx.deps, principalOf(ctx), ctx.query) }),
  revokeMyAuthorization: async (ctx) => {
    await authorizations.revokeMine(ctx.deps, principalOf(ctx), ctx.params.authorizationId);
    return { status: 204, body: undefined };
  },
  listOAuthAuthorizations: async (ctx) => ({ status: 200, body: await authorizations.listOfOrganization(ctx.deps, membershipOf(ctx), ctx.query) }),
  revokeOAuthAuthorization: async (ctx) => {
    await authorizations.revokeInOrganization(ctx.deps, membershipOf(ctx), ctx.params.authorizationId);
    return { status: 204, body: undefined };
  },
  getOAuthPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await authorizations.getPolicy(ctx.deps, membershipOf(ctx)) } }),
  putOAuthPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await authorizations.putPolicy(ctx.deps, membershipOf(ctx), ctx.body) } }),
};
