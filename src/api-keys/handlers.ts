import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as apiKeys from './service';

export const apiKeyHandlers: HandlerMap<'createApiKey' | 'listApiKeys' | 'revokeApiKey'> = {
  createApiKey: async (ctx) => {
    const { item, key } = await apiKeys.createApiKey(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item, key } };
  },

  listApiKeys: async (ctx) => ({ status: 200, body: await apiKeys.listApiKeys(ctx.deps, membershipOf(ctx), ctx.query) }),

  revokeApiKey: async (ctx) => {
    await apiKeys.revokeApiKey(ctx.deps, membershipOf(ctx), ctx.params.apiKeyId);
    return { status: 204, body: undefined };
  },
};
