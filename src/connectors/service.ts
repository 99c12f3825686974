import type { components } from '../../generated/api';
import type { Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { requireRole, resolveResourceRole, visibilityOf, type ResourceRole } from '../access/resource-roles';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { CONNECTOR_INSTANCE } from '../grants/resources';
import { grantCreator, type ResourceGuard } from '../grants/service';
import { withPosition } from '../grants/store';
import * as store from './store';
import { changed, created, deleted, recordChange } from '../audit';

const notFound = () => new NotFound('connector_instance_not_found', 'The connector instance could not be found.');

export function toConnectorInstance(row: store.ConnectorInstanceRow): components['schemas']['ConnectorInstance'] {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    connectorType: row.connector_type,
    remoteId: row.remote_id,
    config: row.config,
    status: row.status,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Not in the organization → 404; role too low → 403 `connector_instance_<role>_required`. */
export async function authorizeConnectorInstance(db: Db, membership: Membership, id: string, needed: ResourceRole) {
  const row = await store.findConnectorInstance(db, membership.organizationId, id);
  if (!row) throw notFound();
  requireRole(await resolveResourceRole(db, CONNECTOR_INSTANCE.ref, membership, id), needed, 'connector_instance');
  return row;
}

export const connectorInstanceGuard: ResourceGuard = (db, membership, id, needed) => authorizeConnectorInstance(db, membership, id, needed);

export async function createConnectorInstance(
  deps: AppDeps,
  membership: Membership,
  body: { name: string; connectorType: string; remoteId?: string; config?: Record<string, unknown> },
) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const row = await store.insertConnectorInstance(trx, {
      id: newId('connectorInstance'),
      organizationId: membership.organizationId,
      name: body.name,
      connectorType: body.connectorType,
      remoteId: body.remoteId ?? null,
      config: body.config ?? {},
      createdByMemberId: membership.memberId,
      now,
    });
    await grantCreator(trx, CONNECTOR_INSTANCE, { organizationId: membership.organizationId, resourceId: row.id, memberId: membership.memberId, now });
    await recordChange(trx, deps.audit, {
      action: 'connector_instance.created',
      target: { type: 'connector_instance', id: row.id },
      changes: created({ name: body.name, connectorType: body.connectorType, remoteId: body.remoteId ?? null, config: body.config ?? {} }),
    });
    return toConnectorInstance(row);
  });
}

export async function listConnectorInstances(deps: AppDeps, membership: Membership, page: PageRequest) {
  const visible = visibilityOf(membership);
  return deps.cursors.page(
    'connector_instances',
    page,
    (after, take) => store.listConnectorInstances(deps.db, membership.organizationId, visible, after, take).then((rows) => withPosition(rows)),
    (row) => toConnectorInstance(row),
  );
}

export async function getConnectorInstance(deps: AppDeps, membership: Membership, id: string) {
  return toConnectorInstance(await authorizeConnectorInstance(deps.db, membership, id, 'viewer'));
}

export async function updateConnectorInstance(
  deps: AppDeps,
  membership: Membership,
  id: string,
  body: { name?: string; remoteId?: string | null; config?: Record<string, unknown>; status?: store.ConnectorStatus },
) {
  return deps.db.transaction().execute(async (trx) => {
    const before = await authorizeConnectorInstance(trx, membership, id, 'editor');
    const row = await store.updateConnectorInstance(trx, membership.organizationId, id, body, deps.clock.now());
    if (!row) throw notFound();
    await recordChange(trx, deps.audit, {
      action: 'connector_instance.updated',
      target: { type: 'connector_instance', id },
      changes: changed({ name: before.name, remoteId: before.remote_id, config: before.config, status: before.status }, body),
    });
    return toConnectorInstance(row);
  });
}

export async function deleteConnectorInstance(deps: AppDeps, membership: Membership, id: string) {
  await deps.db.transaction().execute(async (trx) => {
    const before = await authorizeConnectorInstance(trx, membership, id, 'manager');
    if (!(await store.deleteConnectorInstance(trx, membership.organizationId, id))) throw notFound();
    await recordChange(trx, deps.audit, {
      action: 'connector_instance.deleted',
      target: { type: 'connector_instance', id },
      changes: deleted({ name: before.name, connectorType: before.connector_type }),
    });
  });
}
