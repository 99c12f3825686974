import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Organization resources (docs/templates-and-llm-providers.md): templates (versioned JSON content, optimistic
 * concurrency on `version`) and LLM providers with their access grants (the shared grants column
 * shape, so src/grants and the resource-role resolver serve them). The API key is stored only as
 * SecretBox ciphertext (`api_key_sealed`); `key_hint` is the '…' + last four characters shown back.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE templates (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      kind text NOT NULL,
      content jsonb NOT NULL,
      version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX templates_org_page_idx ON templates (organization_id, created_at DESC, id DESC);
    CREATE INDEX templates_org_kind_page_idx ON templates (organization_id, kind, created_at DESC, id DESC);

    CREATE TABLE llm_providers (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      provider text NOT NULL CHECK (provider IN ('openai', 'anthropic', 'azure-openai', 'google', 'openai-compatible')),
      base_url text,
      api_version text,
      models jsonb NOT NULL DEFAULT '[]',
      default_model text,
      enabled boolean NOT NULL DEFAULT true,
      api_key_sealed text NOT NULL,
      key_hint text NOT NULL,
      key_updated_at timestamptz(3) NOT NULL,
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX llm_providers_org_page_idx ON llm_providers (organization_id, created_at DESC, id DESC);

    CREATE TABLE llm_provider_grants (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      llm_provider_id text NOT NULL REFERENCES llm_providers (id) ON DELETE CASCADE,
      member_id text REFERENCES members (id) ON DELETE CASCADE,
      team_id text REFERENCES teams (id) ON DELETE CASCADE,
      org_wide boolean NOT NULL DEFAULT false,
      role text NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      removed_at timestamptz(3),
      CONSTRAINT llm_provider_grants_one_target CHECK (num_nonnulls(member_id, team_id) + (org_wide::int) = 1)
    );
    CREATE INDEX llm_provider_grants_page_idx ON llm_provider_grants (llm_provider_id, created_at DESC, id DESC);
    CREATE UNIQUE INDEX llm_provider_grants_member_key ON llm_provider_grants (llm_provider_id, member_id) WHERE removed_at IS NULL AND member_id IS NOT NULL;
    CREATE UNIQUE INDEX llm_provider_grants_team_key ON llm_provider_grants (llm_provider_id, team_id) WHERE removed_at IS NULL AND team_id IS NOT NULL;
    CREATE UNIQUE INDEX llm_provider_grants_org_wide_key ON llm_provider_grants (llm_provider_id) WHERE removed_at IS NULL AND org_wide;
    CREATE INDEX llm_provider_grants_member_idx ON llm_provider_grants (member_id) WHERE removed_at IS NULL AND member_id IS NOT NULL;
    CREATE INDEX llm_provider_grants_team_idx ON llm_provider_grants (team_id) WHERE removed_at IS NULL AND team_id IS NOT NULL;
  `,
  );
}
