import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as broker from './broker';
import * as connections from './connections';
import * as myAccount from './my-account';
import * as oauthFlow from './oauth-flow';

type McpOperations =
  | 'listMcpConnections'
  | 'createMcpConnection'
  | 'getMcpConnection'
  | 'updateMcpConnection'
  | 'deleteMcpConnection'
  | 'setMyMcpCredential'
  | 'startMcpConnect'
  | 'completeMcpOAuth'
  | 'disconnectMyMcpAccount'
  | 'issueMcpAccessToken'
  | 'listMyMcpConnectionUses';

export const mcpHandlers: HandlerMap<McpOperations> = {
  listMcpConnections: async (ctx) => ({
    status: 200,
    body: await connections.listConnections(ctx.deps, membershipOf(ctx), { limit: ctx.query.limit, cursor: ctx.query.cursor }),
  }),

  createMcpConnection: async (ctx) => ({ status: 201, body: { ok: true, item: await connections.createConnection(ctx.deps, membershipOf(ctx), ctx.body) } }),

  getMcpConnection: async (ctx) => ({ status: 200, body: { ok: true, item: await connections.getConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId) } }),

  updateMcpConnection: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await connections.updateConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId, ctx.body) },
  }),

  deleteMcpConnection: async (ctx) => {
    await connections.deleteConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId);
    return { status: 204, body: undefined };
  },

  setMyMcpCredential: async (ctx) => {
    const { connectedAt } = await myAccount.setMyCredential(ctx.deps, membershipOf(ctx), ctx.params.connectionId, ctx.body.apiKey);
    return { status: 200, body: { ok: true, connectedAt } };
  },

  startMcpConnect: async (ctx) => ({
    status: 200,
    body: { ok: true, authorizeUrl: await oauthFlow.startConnect(ctx.deps, membershipOf(ctx), ctx.params.connectionId) },
  }),

  completeMcpOAuth: async (ctx) => {
    await oauthFlow.completeOAuth(ctx.deps, { state: ctx.query.state, code: ctx.query.code, error: ctx.query.error, error_description: ctx.query.error_description, iss: ctx.query.iss });
    return { status: 200, body: { ok: true } };
  },

  disconnectMyMcpAccount: async (ctx) => {
    await myAccount.disconnectMyAccount(ctx.deps, membershipOf(ctx), ctx.params.connectionId);
    return { status: 200, body: { ok: true } };
  },

  // A lent credential is never stored by a cache on the way.
  issueMcpAccessToken: async (ctx) => ({
    status: 200,
    body: await broker.lendCredential(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.connectionId),
    headers: { 'cache-control': 'no-store' },
  }),

  listMyMcpConnectionUses: async (ctx) => ({
    status: 200,
    body: await broker.listUses(ctx.deps, membershipOf(ctx), ctx.params.connectionId, { limit: ctx.query.limit, cursor: ctx.query.cursor }),
  }),
};
