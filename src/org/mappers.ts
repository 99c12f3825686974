import type { components } from '../../generated/api';
import type { OrganizationRow, OwnerRow } from './store';

type Schemas = components['schemas'];

export function toOwner(row: OwnerRow | undefined): Schemas['OrganizationOwner'] | null {
  if (!row) return null;
  return { memberId: row.memberId, userId: row.userId, name: row.name, email: row.email, image: row.image };
}

export function toOrganization(row: OrganizationRow, owner: OwnerRow | undefined): Schemas['Organization'] {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan as Schemas['Plan'],
    owner: toOwner(owner),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
