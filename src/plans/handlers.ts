import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as billing from './billing';

export const billingHandlers: HandlerMap<'getBilling' | 'getBillingUsage'> = {
  getBilling: async (ctx) => ({ status: 200, body: await billing.getBilling(ctx.deps, membershipOf(ctx)) }),
  getBillingUsage: async (ctx) => ({ status: 200, body: await billing.getUsage(ctx.deps, membershipOf(ctx), ctx.query.month) }),
};
