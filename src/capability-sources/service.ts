import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { managesAllResources } from '../access/resource-roles';
import { usableProviders } from '../llm-providers/service';
import * as store from './store';

type Source = components['schemas']['CapabilitySource'];

/**
 * GET /v1/capability-sources: what the calling member can use right now, one query per kind
 * (suite, MCP connections, LLM providers) whatever the number of sources.
 */
export async function listCapabilitySources(deps: AppDeps, membership: Membership): Promise<{ items: Source[] }> {
  const viewer = { organizationId: membership.organizationId, memberId: membership.memberId, admin: managesAllResources(membership.permissions) };
  const [suite, mcp, llm] = await Promise.all([
    store.suiteState(deps.db, viewer),
    store.mcpSources(deps.db, viewer),
    usableProviders(deps.db, viewer, { withKeys: false }),
  ]);
  const items: Source[] = [];
  if (suite) {
    const chatSend = suite.features.split(' ').includes('chatSend');
    const connected = chatSend && suite.has_account;
    // Without chatSend there is nothing the member can do; an admin turns it on.
    items.push({ kind: 'suite-365', id: 'suite-365', name: 'Office suite', connected, needsAction: chatSend && !connected ? 'connect' : null });
  }
  for (const c of mcp) {
    const action = c.connected_for_me || c.credential_mode === 'shared' ? null : c.auth_type === 'oauth' ? 'connect' : 'credential';
    items.push({ kind: 'mcp-connection', id: c.id, name: c.name, connected: c.connected_for_me, needsAction: action });
  }
  for (const p of llm) items.push({ kind: 'llm-provider', id: p.id, name: p.name, connected: true, needsAction: null });
  return { items };
}
