import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** Row types of templates and LLM providers (migration 20261123_0400_resources). */
export interface TemplatesTable {
  id: string;
  organization_id: string;
  name: string;
  description: Generated<string>;
  kind: string;
  content: Json<Record<string, unknown>>;
  version: Generated<number>;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LlmProvidersTable {
  id: string;
  organization_id: string;
  name: string;
  provider: string;
  base_url: string | null;
  api_version: string | null;
  models: Json<string[]>;
  default_model: string | null;
  enabled: Generated<boolean>;
  /** SecretBox ciphertext; read only where the key is used (test call, worker config). */
  api_key_sealed: string;
  key_hint: string;
  key_updated_at: Timestamp;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LlmProviderGrantsTable {
  id: string;
  organization_id: string;
  llm_provider_id: string;
  member_id: string | null;
  team_id: string | null;
  org_wide: Generated<boolean>;
  role: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface ResourceTables {
  templates: TemplatesTable;
  llm_providers: LlmProvidersTable;
  llm_provider_grants: LlmProviderGrantsTable;
}
