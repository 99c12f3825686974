import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import { CONNECTOR_INSTANCE } from '../grants/resources';
import * as grants from '../grants/service';
import * as connectors from './service';

type Ops =
  | 'listConnectorInstances'
  | 'createConnectorInstance'
  | 'getConnectorInstance'
  | 'updateConnectorInstance'
  | 'deleteConnectorInstance'
  | 'listConnectorInstanceAccess'
  | 'grantConnectorInstanceAccess'
  | 'revokeConnectorInstanceAccess';

const guard = connectors.connectorInstanceGuard;

export const connectorHandlers: HandlerMap<Ops> = {
  listConnectorInstances: async (ctx) => ({ status: 200, body: await connectors.listConnectorInstances(ctx.deps, membershipOf(ctx), ctx.query) }),
  createConnectorInstance: async (ctx) => ({
    status: 201,
    body: { ok: true, item: await connectors.createConnectorInstance(ctx.deps, membershipOf(ctx), ctx.body) },
  }),
  getConnectorInstance: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await connectors.getConnectorInstance(ctx.deps, membershipOf(ctx), ctx.params.connectorInstanceId) },
  }),
  updateConnectorInstance: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await connectors.updateConnectorInstance(ctx.deps, membershipOf(ctx), ctx.params.connectorInstanceId, ctx.body) },
  }),
  deleteConnectorInstance: async (ctx) => {
    await connectors.deleteConnectorInstance(ctx.deps, membershipOf(ctx), ctx.params.connectorInstanceId);
    return { status: 204, body: undefined };
  },
  listConnectorInstanceAccess: async (ctx) => ({
    status: 200,
    body: await grants.listAccess(ctx.deps, CONNECTOR_INSTANCE, guard, membershipOf(ctx), ctx.params.connectorInstanceId, ctx.query),
  }),
  grantConnectorInstanceAccess: async (ctx) => {
    const { created, item } = await grants.grantAccess(ctx.deps, CONNECTOR_INSTANCE, guard, membershipOf(ctx), ctx.params.connectorInstanceId, ctx.body);
    return created ? { status: 201, body: { ok: true, item } } : { status: 200, body: { ok: true, item } };
  },
  revokeConnectorInstanceAccess: async (ctx) => ({
    status: 200,
    body: {
      ok: true,
      item: await grants.revokeAccess(ctx.deps, CONNECTOR_INSTANCE, guard, membershipOf(ctx), ctx.params.connectorInstanceId, ctx.params.grantId),
    },
  }),
};
