import type { Generated } from 'kysely';
import type { Timestamp } from '../db/columns';

export type ExportStatus = 'pending' | 'running' | 'ready' | 'failed';

/** An organization's export (src/db/migrations/20261214_0200_org_exports.ts). */
export interface OrganizationExportsTable {
  id: string;
  organization_id: string;
  requested_by_member_id: string;
  requested_by_user_id: string;
  status: ExportStatus;
  error: string | null;
  /** Bytes of the zip, once ready (int8: a string from the driver). */
  size: string | null;
  /** Hex SHA-256 of the zip, once ready. */
  sha256: string | null;
  attempts: Generated<number>;
  lease_until: Timestamp | null;
  lease_token: string | null;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  expires_at: Timestamp | null;
  /** Set when the zip's chunks were removed (expired). */
  files_erased_at: Timestamp | null;
}

/** The zip of an export, in order. */
export interface OrganizationExportChunksTable {
  export_id: string;
  organization_id: string;
  seq: number;
  data: Uint8Array;
}

export interface ExportTables {
  organization_exports: OrganizationExportsTable;
  organization_export_chunks: OrganizationExportChunksTable;
}
