import type { components } from '../../generated/api';
import type { ComponentRow, ComponentSummary, ComponentType, PluginRow } from './store';

type Schemas = components['schemas'];

const COMPONENT_TYPES: readonly ComponentType[] = ['resource', 'contribution', 'setup', 'lifecycle'];

/** A component's type: `normalizedPayloadJson.kind` when it names one, else `resource`. */
export function componentTypeOf(input: { normalizedPayloadJson?: Record<string, unknown> }): ComponentType {
  const kind = input.normalizedPayloadJson?.kind;
  return typeof kind === 'string' && (COMPONENT_TYPES as readonly string[]).includes(kind) ? (kind as ComponentType) : 'resource';
}

/**
 * The manifest is derived from the plugin's active components, in order: resource and
 * contribution payloads are listed, setup and lifecycle payloads are merged into one object each.
 */
export function toManifest(row: PluginRow, parts: Pick<ComponentSummary, 'type' | 'payload'>[]): Schemas['Manifest'] {
  type Payload = Record<string, unknown>;
  const resources: Payload[] = [];
  const contributions: Payload[] = [];
  const setup: Payload = {};
  const lifecycle: Payload = {};
  for (const part of parts) {
    const payload = part.payload ?? {};
    if (part.type === 'resource') resources.push(payload);
    else if (part.type === 'contribution') contributions.push(payload);
    else if (part.type === 'setup') Object.assign(setup, payload);
    else Object.assign(lifecycle, payload);
  }
  const manifest = {
    schemaVersion: 1 as const,
    id: row.id,
    name: row.name,
    description: row.description,
    source: { format: row.source_format, trusted: row.source_trusted, origin: row.source_origin, reference: row.source_reference },
    resources,
    contributions,
    setup,
    lifecycle,
  };
  // The published schema declares these as plain `type: object` (any fields); the generated
  // type reads that as an empty record, so the payloads are passed through as they are.
  return manifest as unknown as Schemas['Manifest'];
}

export function toPlugin(row: PluginRow, parts: Pick<ComponentSummary, 'type' | 'payload'>[], marketplaces: { id: string; name: string }[]): Schemas['Plugin'] {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    description: row.description,
    status: row.status,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: row.deleted_at ? row.deleted_at.toISOString() : null,
    memberCount: parts.length,
    marketplaces: marketplaces.map((m) => ({ id: m.id, name: m.name })),
    extension: {
      id: row.id,
      name: row.name,
      description: row.description,
      sourceFormat: row.source_format,
      manifest: toManifest(row, parts),
    },
  };
}

export function toComponent(row: ComponentRow): Schemas['PluginComponent'] {
  return { id: row.id, type: row.type, input: row.input, createdAt: row.created_at.toISOString() };
}
