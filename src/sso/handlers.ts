import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import * as connections from './connections';
import * as domains from './domains';
import * as policy from './policy';
import { samlMetadata } from './metadata';

type ConnectionOperations = 'getSsoSamlMetadata' | 'listSsoConnections' | 'createSsoConnection' | 'getSsoConnection' | 'updateSsoConnection' | 'deleteSsoConnection';

export const ssoConnectionHandlers: HandlerMap<ConnectionOperations> = {
  getSsoSamlMetadata: async (ctx) => {
    const xml = await samlMetadata(ctx.deps, ctx.params.connectionId);
    return { status: 200, body: undefined as never, headers: { 'content-type': 'application/samlmetadata+xml; charset=utf-8' }, stream: (async function* () {
        yield xml;
      })() };
  },
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

type DomainOperations = 'listSsoDomains' | 'createSsoDomain' | 'getSsoDomain' | 'deleteSsoDomain' | 'verifySsoDomain' | 'getSsoPolicy' | 'putSsoPolicy';

export const ssoDomainHandlers: HandlerMap<DomainOperations> = {
  listSsoDomains: async (ctx) => ({ status: 200, body: await domains.listDomains(ctx.deps, membershipOf(ctx), ctx.query) }),
  createSsoDomain: async (ctx) => ({ status: 201, body: { ok: true, item: await domains.createDomain(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body) } }),
  getSsoDomain: async (ctx) => ({ status: 200, body: { ok: true, item: await domains.getDomain(ctx.deps, membershipOf(ctx), ctx.params.domainId) } }),
  deleteSsoDomain: async (ctx) => {
    await domains.deleteDomain(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.domainId);
    return { status: 204, body: undefined };
  },
  verifySsoDomain: async (ctx) => ({ status: 200, body: { ok: true, item: await domains.verifyDomain(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.domainId) } }),
  getSsoPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await policy.getPolicy(ctx.deps, membershipOf(ctx)) } }),
  putSsoPolicy: async (ctx) => ({ status: 200, body: { ok: true, item: await policy.putPolicy(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body.enforce) } }),
};
