import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import { listCapabilitySources } from './service';

export const capabilitySourceHandlers: HandlerMap<'listCapabilitySources'> = {
  listCapabilitySources: async (ctx) => ({ status: 200, body: await listCapabilitySources(ctx.deps, membershipOf(ctx)) }),
};
