import type { ColumnType } from 'kysely';
import type { Timestamp } from '../db/columns';

export interface OrganizationRolesTable {
  id: string;
  organization_id: string;
  key: string;
  name: string;
  description: string;
  /** Custom roles' permission keys; built-in rows keep `{}` (src/access decides theirs). */
  permissions: ColumnType<string[], string[], string[]>;
  built_in: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RoleTables {
  organization_roles: OrganizationRolesTable;
}
