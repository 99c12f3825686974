import type { HandlerMap } from '../http/types';
import { membershipOf, principalOf } from '../access/roles';
import * as connections from './connections';

type ConnectionOperations = 'listSsoConnections' | 'createSsoConnection' | 'getSsoConnection' | 'updateSsoConnection' | 'deleteSsoConnection';

export const ssoConnectionHandlers: HandlerMap<ConnectionOperations> = {
  listSsoConnections: async (ctx) => ({ status: 200, body: await connections.listConnections(ctx.deps, membershipOf(ctx), ctx.query) }),
  createSsoConnection: async (ctx) => ({
    status: 201,
    body: { ok: true, item: await connections.createConnection(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body) },
  }),
  getSsoConnection: async (ctx) => ({ status: 200, body: { ok: true, item: await connections.getConnection(ctx.deps, membershipOf(ctx), ctx.params.connectionId) } }),
  updateSsoConnection: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await connections.updateConnection(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.connectionId, ctx.body) },
  }),
  deleteSsoConnection: async (ctx) => {
    await connections.deleteConnection(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.connectionId);
    return { status: 204, body: undefined };
  },
};
