import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { newId } from '../lib/ids';
import { MARKETPLACE } from '../grants/resources';
import { insertGrants } from '../grants/store';
import { addPlugins, insertMarketplace } from '../marketplaces/service';
import { componentTypeOf } from './mappers';
import { insertComponents, insertPlugin, type NewComponent } from './store';

/**
 * What every new organization starts with: one built-in marketplace (not custom: it can be
 * archived, never deleted), visible to every member through an org-wide viewer grant, holding the
 * product's built-in plugins.
 */
export const BUILTIN_MARKETPLACE = {
  name: 'Built-in plugins',
  description: 'Plugins that ship with the product.',
};

interface BuiltinPlugin {
  reference: string;
  name: string;
  description: string;
  components: { kind: 'resource' | 'contribution' | 'setup' | 'lifecycle'; payload: Record<string, unknown> }[];
}

export const BUILTIN_PLUGINS: readonly BuiltinPlugin[] = [
  {
    reference: 'builtin/web-search',
    name: 'Web search',
    description: 'Search the public web and cite the results.',
    components: [
      { kind: 'resource', payload: { kind: 'resource', type: 'tool', name: 'web_search' } },
      { kind: 'contribution', payload: { kind: 'contribution', type: 'command', name: 'search' } },
    ],
  },
  {
    reference: 'builtin/files',
    name: 'Files',
    description: 'Read and write files in the workspace.',
    components: [
      { kind: 'resource', payload: { kind: 'resource', type: 'tool', name: 'read_file' } },
      { kind: 'resource', payload: { kind: 'resource', type: 'tool', name: 'write_file' } },
      { kind: 'setup', payload: { kind: 'setup', requiresWorkspace: true } },
    ],
  },
  {
    reference: 'builtin/scheduler',
    name: 'Scheduler',
    description: 'Run tasks on a schedule.',
    components: [
      { kind: 'contribution', payload: { kind: 'contribution', type: 'trigger', name: 'cron' } },
      { kind: 'lifecycle', payload: { kind: 'lifecycle', onInstall: 'register-triggers' } },
    ],
  },
];

export async function provisionBuiltinPlugins(trx: Transaction<DB>, org: { organizationId: string; ownerMemberId: string; now: Date }): Promise<void> {
  const { organizationId, now } = org;
  const marketplaceId = newId('marketplace');
  await insertMarketplace(trx, { id: marketplaceId, organizationId, ...BUILTIN_MARKETPLACE, logoUrl: null, isCustom: false, createdByMemberId: null, now });
  await insertGrants(trx, MARKETPLACE, [
    { id: newId('marketplaceGrant'), organizationId, resourceId: marketplaceId, target: { orgWide: true }, role: 'viewer', createdByMemberId: null, now },
  ]);
  const memberships = [];
  for (const plugin of BUILTIN_PLUGINS) {
    const pluginId = newId('plugin');
    await insertPlugin(trx, {
      id: pluginId,
      organizationId,
      name: plugin.name,
      description: plugin.description,
      source: { format: 'product-builtin', origin: 'builtin', trusted: true, reference: plugin.reference },
      createdByMemberId: null,
      now,
    });
    const components: NewComponent[] = plugin.components.map((c, position) => {
      const input = { normalizedPayloadJson: c.payload, parserMode: 'builtin', schemaVersion: '1' };
      return { id: newId('pluginComponent'), position, type: componentTypeOf(input), input };
    });
    await insertComponents(trx, organizationId, pluginId, components, now);
    memberships.push({ marketplaceId, pluginId, organizationId, now });
  }
  await addPlugins(trx, memberships);
}
