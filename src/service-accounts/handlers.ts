import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as serviceAccounts from './service';
import * as secrets from './secrets';
import { createServiceAccountApiKey } from './api-keys';

export const serviceAccountHandlers: HandlerMap<
  | 'createServiceAccount'
  | 'listServiceAccounts'
  | 'getServiceAccount'
  | 'updateServiceAccount'
  | 'deleteServiceAccount'
  | 'createServiceAccountSecret'
  | 'listServiceAccountSecrets'
  | 'deleteServiceAccountSecret'
  | 'createServiceAccountApiKey'
> = {
  createServiceAccount: async (ctx) => ({ status: 201, body: { ok: true, item: await serviceAccounts.createServiceAccount(ctx.deps, membershipOf(ctx), ctx.body) } }),

  listServiceAccounts: async (ctx) => ({ status: 200, body: await serviceAccounts.listServiceAccounts(ctx.deps, membershipOf(ctx), ctx.query) }),

  getServiceAccount: async (ctx) => ({ status: 200, body: { ok: true, item: await serviceAccounts.getServiceAccount(ctx.deps, membershipOf(ctx), ctx.params.serviceAccountId) } }),

  updateServiceAccount: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await serviceAccounts.updateServiceAccount(ctx.deps, membershipOf(ctx), ctx.params.serviceAccountId, ctx.body) },
  }),

  deleteServiceAccount: async (ctx) => {
    await serviceAccounts.deleteServiceAccount(ctx.deps, membershipOf(ctx), ctx.params.serviceAccountId);
    return { status: 204, body: undefined };
  },

  createServiceAccountSecret: async (ctx) => {
    const { item, clientSecret } = await secrets.createSecret(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.serviceAccountId, ctx.body ?? {});
    return { status: 201, body: { ok: true, item, clientSecret } };
  },

  createServiceAccountApiKey: async (ctx) => {
    const { item, key } = await createServiceAccountApiKey(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.serviceAccountId, ctx.body);
    return { status: 201, body: { ok: true, item, key } };
  },

  listServiceAccountSecrets: async (ctx) => ({ status: 200, body: await secrets.listSecrets(ctx.deps, membershipOf(ctx), ctx.params.serviceAccountId, ctx.query) }),

  deleteServiceAccountSecret: async (ctx) => {
    await secrets.deleteSecret(ctx.deps, membershipOf(ctx), ctx.params.serviceAccountId, ctx.params.secretId);
    return { status: 204, body: undefined };
  },
};
