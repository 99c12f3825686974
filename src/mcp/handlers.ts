import type { HandlerMap } from '../http/types';
import { membershipOf } from '../access/roles';
import * as mcp from './service';

type McpOperations =
  | 'listMcpConnections'
  | 'createMcpConnection'
  | 'getMcpConnection'
  | 'updateMcpConnection'
  | 'deleteMcpConnection'
  | 'setMyMcpCredential'
  | 'startMcpConnect'
  | 'completeMcpOAuth'
  | 'disconnectMyMcpAccount';

export const mcpHandlers: HandlerMap<McpOperations> = {
  listMcpConnections: async (ctx) => ({
    status: 200,
    body: await mcp.listConnections(ctx.deps, membershipOf(ctx), { limit: ctx.query.limit, cursor: ctx.query.cursor }),
  }),

  createMcpConnection: async (ctx) => ({ status: 201, body: { ok: true, item: await mcp.createConnection(ctx.deps, membershipOf(ctx), ctx.body) } }),

  getMcpConnection: async (ctx) => ({ status: 200, body: { ok: true, item: await mcp.getConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId) } }),

  updateMcpConnection: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await mcp.updateConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId, ctx.body) },
  }),

  deleteMcpConnection: async (ctx) => {
    await mcp.deleteConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId);
    return { status: 204, body: undefined };
  },

  setMyMcpCredential: async (ctx) => {
    const { connectedAt } = await mcp.setMyCredential(ctx.deps, membershipOf(ctx), ctx.params.connectionId, ctx.body.apiKey);
    return { status: 200, body: { ok: true, connectedAt } };
  },

  startMcpConnect: async (ctx) => ({
    status: 200,
    body: { ok: true, authorizeUrl: await mcp.startConnect(ctx.deps, membershipOf(ctx), ctx.params.connectionId) },
  }),

  completeMcpOAuth: async (ctx) => {
    await mcp.completeOAuth(ctx.deps, { state: ctx.query.state, code: ctx.query.code, error: ctx.query.error, error_description: ctx.query.error_description, iss: ctx.query.iss });
    return { status: 200, body: { ok: true } };
  },

  disconnectMyMcpAccount: async (ctx) => {
    await mcp.disconnectMyAccount(ctx.deps, membershipOf(ctx), ctx.params.connectionId);
    return { status: 200, body: { ok: true } };
  },
};
