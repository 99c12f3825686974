import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { recordChange } from '../audit';
import * as store from './store';
import type { McpPolicy } from './store';

export type { McpPolicy } from './store';

/** The organization's MCP policy (docs/mcp-server.md#the-organizations-policy): the defaults until it is set. */
export async function getPolicy(deps: AppDeps, membership: Membership): Promise<McpPolicy> {
  return store.findPolicy(deps.db, membership.organizationId);
}

/** Read on every `/mcp` request, after its token named the organization. */
export function policyOf(deps: AppDeps, organizationId: string): Promise<McpPolicy> {
  return store.findPolicy(deps.db, organizationId);
}

/** Sets both fields; writes one audit entry (and its event) in the same transaction. */
export async function putPolicy(deps: AppDeps, membership: Membership, policy: McpPolicy): Promise<McpPolicy> {
  const { organizationId } = membership;
  const next = { enabled: policy.enabled, writes: policy.writes };
  await deps.db.transaction().execute(async (trx) => {
    const before = await store.findPolicy(trx, organizationId);
    await store.putPolicy(trx, organizationId, next, deps.clock.now());
    const changes: Record<string, { from: boolean; to: boolean }> = {};
    if (before.enabled !== next.enabled) changes.enabled = { from: before.enabled, to: next.enabled };
    if (before.writes !== next.writes) changes.writes = { from: before.writes, to: next.writes };
    // Every accepted PUT is one entry, as every change request is (docs/audit.md), even one that
    // restates the current values (its changes are then empty).
    await recordChange(trx, deps.audit, { organizationId, action: 'organization.mcp_policy_updated', target: { type: 'organization', id: organizationId }, changes });
  });
  return next;
}
