import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as events from '../events/service';
import * as webhooks from './service';

export const webhookHandlers: HandlerMap<
  | 'listEvents'
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'testWebhook'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery'
> = {
  listEvents: async (ctx) => ({ status: 200, body: await events.listEvents(ctx.deps, membershipOf(ctx), ctx.query) }),

  createWebhook: async (ctx) => {
    const { item, secret } = await webhooks.createWebhook(ctx.deps, membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item, secret } };
  },

  listWebhooks: async (ctx) => ({ status: 200, body: await webhooks.listWebhooks(ctx.deps, membershipOf(ctx), ctx.query) }),

  getWebhook: async (ctx) => ({ status: 200, body: { ok: true, item: await webhooks.getWebhook(ctx.deps, membershipOf(ctx), ctx.params.webhookId) } }),

  updateWebhook: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await webhooks.updateWebhook(ctx.deps, membershipOf(ctx), ctx.params.webhookId, ctx.body) },
  }),

  deleteWebhook: async (ctx) => {
    await webhooks.deleteWebhook(ctx.deps, membershipOf(ctx), ctx.params.webhookId);
    return { status: 204, body: undefined };
  },

  rotateWebhookSecret: async (ctx) => ({
    status: 200,
    body: { ok: true, secret: await webhooks.rotateWebhookSecret(ctx.deps, membershipOf(ctx), ctx.params.webhookId) },
  }),

  testWebhook: async (ctx) => ({ status: 202, body: { ok: true, ...(await webhooks.testWebhook(ctx.deps, membershipOf(ctx), ctx.params.webhookId)) } }),

  listWebhookDeliveries: async (ctx) => ({
    status: 200,
    body: await webhooks.listDeliveries(ctx.deps, membershipOf(ctx), ctx.params.webhookId, ctx.query),
  }),

  retryWebhookDelivery: async (ctx) => ({
    status: 202,
    body: { ok: true, item: await webhooks.retryDelivery(ctx.deps, membershipOf(ctx), ctx.params.webhookId, ctx.params.deliveryId) },
  }),
};
