import type { components } from '../../generated/api';
import type { Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { requireRole, resolveResourceRole, visibilityOf, type ResourceRole } from '../access/resource-roles';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { Page, PageRequest, Position } from '../lib/pagination';
import { LLM_PROVIDER } from '../grants/resources';
import { grantCreator, type ResourceGuard } from '../grants/service';
import { checkBaseUrl } from './egress';
import { needsBaseUrl, type ProviderKind } from './model-list';
import { changed, created, deleted, recordChange } from '../audit';
import { enforceLimit } from '../plans';
import * as store from './store';

type Schemas = components['schemas'];

export const providerNotFound = () => new NotFound('llm_provider_not_found', 'The LLM provider could not be found.');

/** '…' + the last four characters; a short key shows none of itself. */
export function keyHintOf(apiKey: string): string {
  return apiKey.length >= 8 ? `…${apiKey.slice(-4)}` : '…';
}

export function toProvider(row: store.ProviderRow): Schemas['LlmProvider'] {
  return {
    id: row.id,
    name: row.name,
    provider: row.provider,
    baseUrl: row.base_url,
    apiVersion: row.api_version,
    models: row.models,
    defaultModel: row.default_model,
    enabled: row.enabled,
    keyConfigured: true,
    keyHint: row.key_hint,
    keyUpdatedAt: row.key_updated_at.toISOString(),
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** What an audit entry shows of a provider: never the key (keyHint is what replies show anyway). */
function audited(row: store.ProviderRow) {
  const { baseUrl, apiVersion, models, defaultModel, enabled, keyHint, keyUpdatedAt, name, provider } = toProvider(row);
  return { name, provider, baseUrl, apiVersion, models, defaultModel, enabled, keyHint, keyUpdatedAt };
}

/**
 * Not in the organization → 404; in it but the caller's role is too low → 403
 * `llm_provider_<role>_required`. viewer = may use it, manager = may edit it; admins are manager.
 */
export async function authorizeProvider(db: Db, membership: Membership, id: string, needed: ResourceRole): Promise<store.ProviderRow> {
  const row = await store.findProvider(db, membership.organizationId, id);
  if (!row) throw providerNotFound();
  requireRole(await resolveResourceRole(db, LLM_PROVIDER.ref, membership, id), needed, 'llm_provider', 'LLM provider');
  return row;
}

export const providerGuard: ResourceGuard = (db, membership, id, needed) => authorizeProvider(db, membership, id, needed);

function checkDefaultModel(models: string[], defaultModel: string | null, field: string[]): void {
  if (defaultModel !== null && !models.includes(defaultModel)) throw Invalid.at(field, `defaultModel "${defaultModel}" is not one of models`);
}

function checkKeyIsNotHint(apiKey: string, current: store.ProviderRow): void {
  if (apiKey === current.key_hint) throw Invalid.at(['body', 'apiKey'], 'is the masked keyHint, not a key; leave apiKey out to keep the stored key');
}

function sealKey(deps: AppDeps, apiKey: string, now: Date) {
  return { api_key_sealed: deps.secrets.encrypt(apiKey), key_hint: keyHintOf(apiKey), key_updated_at: now };
}

export async function createProvider(deps: AppDeps, membership: Membership, body: Schemas['CreateLlmProviderRequest']) {
  const provider = body.provider as ProviderKind;
  if (body.baseUrl === undefined && needsBaseUrl(provider)) throw Invalid.at(['body', 'baseUrl'], `is required for provider ${provider}`);
  if (body.baseUrl !== undefined) checkBaseUrl(deps, body.baseUrl, ['body', 'baseUrl']);
  const models = body.models ?? [];
  checkDefaultModel(models, body.defaultModel ?? null, ['body', 'defaultModel']);
  const id = newId('llmProvider');
  const now = deps.clock.now();
  const key = sealKey(deps, body.apiKey, now);
  return deps.db.transaction().execute(async (trx) => {
    // Locks the organization row, then counts: racing creations stop exactly at the plan's limit.
    await enforceLimit(trx, deps.settings, membership.organizationId, 'llmProviders');
    await store.insertProvider(trx, {
      id,
      organizationId: membership.organizationId,
      name: body.name,
      provider,
      baseUrl: body.baseUrl ?? null,
      apiVersion: body.apiVersion ?? null,
      models,
      defaultModel: body.defaultModel ?? null,
      enabled: body.enabled ?? true,
      apiKeySealed: key.api_key_sealed,
      keyHint: key.key_hint,
      memberId: membership.memberId,
      now,
    });
    await grantCreator(trx, LLM_PROVIDER, { organizationId: membership.organizationId, resourceId: id, memberId: membership.memberId, now });
    const row = await store.findProvider(trx, membership.organizationId, id);
    if (!row) throw providerNotFound();
    await recordChange(trx, deps.audit, { action: 'llm_provider.created', target: { type: 'llm_provider', id }, changes: created(audited(row)) });
    return toProvider(row);
  });
}

export async function listProviders(deps: AppDeps, membership: Membership, page: PageRequest): Promise<Page<Schemas['LlmProvider']>> {
  const visibleTo = visibilityOf(membership);
  return deps.cursors.page<store.ProviderRow & Position, Schemas['LlmProvider']>(
    'llm_providers',
    page,
    (after, take) => store.listProviders(deps.db, membership.organizationId, visibleTo, after, take),
    toProvider,
  );
}

export async function getProvider(deps: AppDeps, membership: Membership, id: string) {
  return toProvider(await authorizeProvider(deps.db, membership, id, 'viewer'));
}

export async function updateProvider(deps: AppDeps, membership: Membership, id: string, body: Schemas['UpdateLlmProviderRequest']) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const current = await authorizeProvider(trx, membership, id, 'manager');
    const patch: store.ProviderPatch = {};
    if (body.name !== undefined) patch.name = body.name;
    if (body.baseUrl !== undefined) {
      if (body.baseUrl === null && needsBaseUrl(current.provider)) throw Invalid.at(['body', 'baseUrl'], `is required for provider ${current.provider}`);
      if (body.baseUrl !== null) checkBaseUrl(deps, body.baseUrl, ['body', 'baseUrl']);
      patch.base_url = body.baseUrl;
    }
    if (body.apiVersion !== undefined) patch.api_version = body.apiVersion;
    if (body.models !== undefined) patch.models = body.models;
    if (body.defaultModel !== undefined) patch.default_model = body.defaultModel;
    if (body.enabled !== undefined) patch.enabled = body.enabled;
    const models = patch.models ?? current.models;
    const defaultModel = patch.default_model !== undefined ? patch.default_model : current.default_model;
    checkDefaultModel(models, defaultModel, body.defaultModel !== undefined ? ['body', 'defaultModel'] : ['body', 'models']);
    if (body.apiKey !== undefined) {
      checkKeyIsNotHint(body.apiKey, current);
      Object.assign(patch, sealKey(deps, body.apiKey, now));
    }
    const row = await store.updateProvider(trx, membership.organizationId, id, patch, now);
    if (!row) throw providerNotFound();
    await recordChange(trx, deps.audit, { action: 'llm_provider.updated', target: { type: 'llm_provider', id }, changes: changed(audited(current), audited(row)) });
    return toProvider(row);
  });
}

export async function setProviderKey(deps: AppDeps, membership: Membership, id: string, apiKey: string) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const current = await authorizeProvider(trx, membership, id, 'manager');
    checkKeyIsNotHint(apiKey, current);
    const row = await store.updateProvider(trx, membership.organizationId, id, sealKey(deps, apiKey, now), now);
    if (!row) throw providerNotFound();
    const changes = changed({ keyHint: current.key_hint, keyUpdatedAt: current.key_updated_at }, { keyHint: row.key_hint, keyUpdatedAt: row.key_updated_at });
    await recordChange(trx, deps.audit, { action: 'llm_provider.key_rotated', target: { type: 'llm_provider', id }, changes });
    return toProvider(row);
  });
}

export async function deleteProvider(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const current = await authorizeProvider(trx, membership, id, 'manager');
    if (!(await store.deleteProvider(trx, membership.organizationId, id))) throw providerNotFound();
    await recordChange(trx, deps.audit, { action: 'llm_provider.deleted', target: { type: 'llm_provider', id }, changes: deleted({ name: current.name, provider: current.provider }) });
  });
}

/** The organization's providers a capability source may use. */
export { usableProviders } from './store';
