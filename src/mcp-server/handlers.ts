import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import * as policy from './policy';

type McpServerOperations = 'getMcpPolicy' | 'putMcpPolicy';

export const mcpServerHandlers: HandlerMap<McpServerOperations> = {
  getMcpPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await policy.getPolicy(ctx.deps, membershipOf(ctx)) } }),
  putMcpPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await policy.putPolicy(ctx.deps, membershipOf(ctx), ctx.body) } }),
};
