import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as telemetry from './service';

export const telemetryHandlers: HandlerMap<'ingestTelemetry' | 'getUsageAnalytics'> = {
  ingestTelemetry: async (ctx) => {
    const accepted = await telemetry.ingest(ctx.deps, membershipOf(ctx), ctx.body.events);
    return { status: 202, body: { ok: true, accepted } };
  },

  getUsageAnalytics: async (ctx) => ({ status: 200, body: await telemetry.usageAnalytics(ctx.deps, membershipOf(ctx), ctx.query) }),
};
