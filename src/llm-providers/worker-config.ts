import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Principal, WorkerPrincipal } from '../domain/principal';
import { builtInPermissions, isBuiltInRole } from '../access/roles';
import { managesAllResources } from '../access/resource-roles';
import { Forbidden, Unauthorized } from '../lib/errors';
import { delegatedWorkerOf } from '../access/roles';
import { effectiveApiVersion, effectiveBaseUrl } from './model-list';
import * as store from './store';
import { recordChange } from '../audit';
import { workerStopped } from '../workers/service';

/**
 * GET /v1/workers/{id}/llm-config (the worker's own token, `workerToken` scheme): the enabled
 * providers the worker's creator may use at this moment, keys decrypted. Nothing is cached, so a
 * revoked grant, a disabled provider or the creator leaving the organization applies at once.
 */
export async function workerLlmConfig(deps: AppDeps, worker: WorkerPrincipal, workerId: string): Promise<components['schemas']['WorkerLlmConfig']> {
  if (worker.workerId !== workerId) throw new Unauthorized('The worker token is not valid for this worker.');
  const creator = await store.workerCreator(deps.db, worker.organizationId, worker.workerId);
  if (!creator) throw new Unauthorized('The worker token is not valid for this worker.');
  // A stopped worker gets no keys (as its heartbeats and activity are refused) until it is started.
  if (creator.stopped_at !== null) throw workerStopped();
  if (creator.role === null) return { items: [] };
  return configOf(deps, { organizationId: worker.organizationId, memberId: creator.member_id, role: creator.role });
}

/**
 * The same route with a delegated token (docs/workers-and-usage.md#the-credential-broker): the
 * providers the *member* the worker acts for may use now, not its creator's. The token's principal
 * query has already checked the delegation live, the member active and the worker running; the
 * path must name the token's own worker. Each answer is audited as `credential.issued`.
 */
export async function delegatedLlmConfig(deps: AppDeps, principal: Principal, workerId: string): Promise<components['schemas']['WorkerLlmConfig']> {
  const actor = delegatedWorkerOf(principal);
  if (actor !== workerId) throw new Forbidden('delegation_required', 'The token acts through another worker than the one in the path.');
  const membership = principal.membership!;
  const config = await configOf(deps, { organizationId: membership.organizationId, memberId: membership.memberId, role: membership.role });
  // Lending the member's keys to the agent is a broker answer: audited as the MCP loans are (never the keys).
  await deps.db.transaction().execute((trx) =>
    recordChange(trx, deps.audit, {
      action: 'credential.issued',
      target: { type: 'worker', id: workerId },
      changes: { lent: { from: null, to: 'llm_provider_keys' }, llmProviders: { from: null, to: config.items.map((item) => item.id) } },
    }),
  );
  return config;
}

async function configOf(deps: AppDeps, member: { organizationId: string; memberId: string; role: string }): Promise<components['schemas']['WorkerLlmConfig']> {
  // A custom role's permissions are not known here: its grants alone decide.
  const admin = isBuiltInRole(member.role) && managesAllResources(builtInPermissions(member.role));
  const rows = await store.usableProviders(deps.db, { organizationId: member.organizationId, memberId: member.memberId, admin }, { withKeys: true });
  return {
    items: rows.map((row) => ({
      id: row.id,
      provider: row.provider,
      baseUrl: effectiveBaseUrl(row.provider, row.base_url),
      apiVersion: effectiveApiVersion(row.provider, row.api_version),
      models: row.models,
      defaultModel: row.default_model,
      apiKey: deps.secrets.decrypt(row.api_key_sealed),
    })),
  };
}
