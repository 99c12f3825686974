import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as clients from './service';

export const oauthClientHandlers: HandlerMap<'createOAuthClient' | 'listOAuthClients' | 'getOAuthClient' | 'updateOAuthClient' | 'deleteOAuthClient'> = {
  createOAuthClient: async (ctx) => {
    const { item, clientSecret } = await clients.createOAuthClient(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item, ...(clientSecret ? { clientSecret } : {}) } };
  },

  listOAuthClients: async (ctx) => ({ status: 200, body: await clients.listOAuthClients(ctx.deps, membershipOf(ctx), ctx.query) }),

  getOAuthClient: async (ctx) => ({ status: 200, body: { ok: true, item: await clients.getOAuthClient(ctx.deps, membershipOf(ctx), ctx.params.oauthClientId) } }),

  updateOAuthClient: async (ctx) => ({ status: 200, body: { ok: true, item: await clients.updateOAuthClient(ctx.deps, membershipOf(ctx), ctx.params.oauthClientId, ctx.body) } }),

  deleteOAuthClient: async (ctx) => {
    await clients.deleteOAuthClient(ctx.deps, membershipOf(ctx), ctx.params.oauthClientId);
    return { status: 204, body: undefined };
  },
};
