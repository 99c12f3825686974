import type { HandlerMap } from '../contract';
import * as admin from './service';
import { listMail } from '../mail/service';

export const adminHandlers: HandlerMap<'adminListOrganizations' | 'adminUpdateOrganization' | 'adminListMail'> = {
  adminListOrganizations: async (ctx) => ({ status: 200, body: await admin.listOrganizations(ctx.deps, ctx.query) }),

  adminUpdateOrganization: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await admin.setPlan(ctx.deps, ctx.params.organizationId, ctx.body.plan) },
  }),

  adminListMail: async (ctx) => ({ status: 200, body: await listMail(ctx.deps, ctx.query) }),
};
