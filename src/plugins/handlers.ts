import type { HandlerMap } from '../contract';
import { membershipOf } from '../access/roles';
import { PLUGIN } from '../grants/resources';
import * as grants from '../grants/service';
import * as plugins from './service';

type Ops =
  | 'createPlugin'
  | 'listPlugins'
  | 'getPlugin'
  | 'updatePlugin'
  | 'archivePlugin'
  | 'restorePlugin'
  | 'listPluginComponents'
  | 'listPluginAccess'
  | 'grantPluginAccess'
  | 'revokePluginAccess';

const guard = plugins.pluginGuard;

export const pluginHandlers: HandlerMap<Ops> = {
  createPlugin: async (ctx) => ({ status: 201, body: { ok: true, item: await plugins.createPlugin(ctx.deps, membershipOf(ctx), ctx.body) } }),
  listPlugins: async (ctx) => ({ status: 200, body: await plugins.listPlugins(ctx.deps, membershipOf(ctx), ctx.query) }),
  getPlugin: async (ctx) => ({ status: 200, body: { ok: true, item: await plugins.getPlugin(ctx.deps, membershipOf(ctx), ctx.params.pluginId) } }),
  updatePlugin: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await plugins.updatePlugin(ctx.deps, membershipOf(ctx), ctx.params.pluginId, ctx.body) },
  }),
  archivePlugin: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await plugins.setPluginStatus(ctx.deps, membershipOf(ctx), ctx.params.pluginId, 'archived') },
  }),
  restorePlugin: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await plugins.setPluginStatus(ctx.deps, membershipOf(ctx), ctx.params.pluginId, 'active') },
  }),
  listPluginComponents: async (ctx) => ({ status: 200, body: await plugins.listComponents(ctx.deps, membershipOf(ctx), ctx.params.pluginId, ctx.query) }),
  listPluginAccess: async (ctx) => ({
    status: 200,
    body: await grants.listAccess(ctx.deps, PLUGIN, guard, membershipOf(ctx), ctx.params.pluginId, ctx.query),
  }),
  grantPluginAccess: async (ctx) => {
    const { created, item } = await grants.grantAccess(ctx.deps, PLUGIN, guard, membershipOf(ctx), ctx.params.pluginId, ctx.body);
    return created ? { status: 201, body: { ok: true, item } } : { status: 200, body: { ok: true, item } };
  },
  revokePluginAccess: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await grants.revokeAccess(ctx.deps, PLUGIN, guard, membershipOf(ctx), ctx.params.pluginId, ctx.params.grantId) },
  }),
};
