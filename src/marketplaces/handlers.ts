import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import { MARKETPLACE } from '../grants/resources';
import * as grants from '../grants/service';
import * as marketplaces from './service';
import * as published from './plugins';

type Ops =
  | 'listMarketplaces'
  | 'createMarketplace'
  | 'getMarketplace'
  | 'updateMarketplace'
  | 'deleteMarketplace'
  | 'archiveMarketplace'
  | 'restoreMarketplace'
  | 'listMarketplacePlugins'
  | 'addMarketplacePlugin'
  | 'removeMarketplacePlugin'
  | 'listMarketplaceAccess'
  | 'grantMarketplaceAccess'
  | 'revokeMarketplaceAccess';

const guard = marketplaces.marketplaceGuard;

export const marketplaceHandlers: HandlerMap<Ops> = {
  listMarketplaces: async (ctx) => ({ status: 200, body: await marketplaces.listMarketplaces(ctx.deps, membershipOf(ctx), ctx.query) }),
  createMarketplace: async (ctx) => ({ status: 201, body: { ok: true, item: await marketplaces.createMarketplace(ctx.deps, membershipOf(ctx), ctx.body) } }),
  getMarketplace: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await marketplaces.getMarketplace(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId) },
  }),
  updateMarketplace: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await marketplaces.updateMarketplace(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId, ctx.body) },
  }),
  deleteMarketplace: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await marketplaces.deleteMarketplace(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId) },
  }),
  archiveMarketplace: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await marketplaces.archiveMarketplace(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId) },
  }),
  restoreMarketplace: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await marketplaces.restoreMarketplace(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId) },
  }),
  listMarketplacePlugins: async (ctx) => ({
    status: 200,
    body: await published.listMarketplacePlugins(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId, ctx.query),
  }),
  addMarketplacePlugin: async (ctx) => {
    const { created, item } = await published.addMarketplacePlugin(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId, ctx.body.pluginId);
    return created ? { status: 201, body: { ok: true, item } } : { status: 200, body: { ok: true, item } };
  },
  removeMarketplacePlugin: async (ctx) => {
    await published.removeMarketplacePlugin(ctx.deps, membershipOf(ctx), ctx.params.marketplaceId, ctx.params.pluginId);
    return { status: 204, body: undefined };
  },
  listMarketplaceAccess: async (ctx) => ({
    status: 200,
    body: await grants.listAccess(ctx.deps, MARKETPLACE, guard, membershipOf(ctx), ctx.params.marketplaceId, ctx.query),
  }),
  grantMarketplaceAccess: async (ctx) => {
    const { created, item } = await grants.grantAccess(ctx.deps, MARKETPLACE, guard, membershipOf(ctx), ctx.params.marketplaceId, ctx.body);
    return created ? { status: 201, body: { ok: true, item } } : { status: 200, body: { ok: true, item } };
  },
  revokeMarketplaceAccess: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await grants.revokeAccess(ctx.deps, MARKETPLACE, guard, membershipOf(ctx), ctx.params.marketplaceId, ctx.params.grantId) },
  }),
};
