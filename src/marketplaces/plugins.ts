import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { PageRequest } from '../lib/pagination';
import { authorizePlugin, hydrate, pluginNotFound } from '../plugins/service';
import { listPluginRows as listPlugins } from '../plugins/service';
import { withPosition } from '../grants/store';
import { authorizeMarketplace } from './service';
import * as store from './store';
import { recordChange } from '../audit';

/** The plugins published to a marketplace (viewer on the marketplace), newest first. */
export async function listMarketplacePlugins(deps: AppDeps, membership: Membership, marketplaceId: string, page: PageRequest) {
  await authorizeMarketplace(deps.db, membership, marketplaceId, 'viewer');
  const { organizationId } = membership;
  const result = await deps.cursors.page(
    `marketplace_plugins:${marketplaceId}`,
    page,
    (after, take) => listPlugins(deps.db, organizationId, { marketplaceId, visibleToMemberId: null }, after, take).then((rows) => withPosition(rows)),
    (row) => row,
  );
  return { items: await hydrate(deps.db, organizationId, result.items), nextCursor: result.nextCursor };
}

/** Publishes a plugin (editor on the marketplace, viewer on the plugin); `created` false when already there. */
export async function addMarketplacePlugin(deps: AppDeps, membership: Membership, marketplaceId: string, pluginId: string) {
  return deps.db.transaction().execute(async (trx) => {
    await authorizeMarketplace(trx, membership, marketplaceId, 'editor');
    const plugin = await authorizePlugin(trx, membership, pluginId, 'viewer');
    const created = await store.addPlugin(trx, {
      organizationId: membership.organizationId,
      marketplaceId,
      pluginId,
      memberId: membership.memberId,
      now: deps.clock.now(),
    });
    await recordChange(trx, deps.audit, { action: 'marketplace.plugin_added', target: { type: 'marketplace', id: marketplaceId }, changes: { pluginId: { from: null, to: pluginId } } });
    const [item] = await hydrate(trx, membership.organizationId, [plugin]);
    return { created, item: item! };
  });
}

export async function removeMarketplacePlugin(deps: AppDeps, membership: Membership, marketplaceId: string, pluginId: string) {
  await deps.db.transaction().execute(async (trx) => {
    await authorizeMarketplace(trx, membership, marketplaceId, 'editor');
    if (!(await store.removePlugin(trx, membership.organizationId, marketplaceId, pluginId))) throw pluginNotFound();
    await recordChange(trx, deps.audit, { action: 'marketplace.plugin_removed', target: { type: 'marketplace', id: marketplaceId }, changes: { pluginId: { from: pluginId, to: null } } });
  });
}
