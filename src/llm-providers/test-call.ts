import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Upstream } from '../lib/errors';
import { authorizeProvider, providerNotFound } from './service';
import { EgressFailure, getJson, type ProviderReply } from './egress';
import { modelListCall, parseModelList } from './model-list';
import * as store from './store';

const providerError = (message: string) => new Upstream('llm_provider_error', message);

function header(reply: ProviderReply, name: string): string | undefined {
  const value = reply.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * What went wrong, in words that never carry the key: only the status, a Retry-After in seconds,
 * or the transport failure. Provider bodies are not quoted (some echo the key they refused).
 */
function failure(reply: ProviderReply): string {
  const retryAfter = header(reply, 'retry-after');
  const wait = reply.status === 429 && retryAfter && /^\d{1,6}$/.test(retryAfter.trim()) ? `; retry after ${retryAfter.trim()} s` : '';
  const what = reply.status === 401 || reply.status === 403 ? ' (the key was refused)' : reply.status === 429 ? ' (rate limited)' : '';
  return `The LLM provider answered HTTP ${reply.status}${what}${wait}.`;
}

/** POST /v1/llm-providers/{id}/test: the provider's model list with the stored key (manager). */
export async function testProvider(deps: AppDeps, membership: Membership, id: string): Promise<{ ok: true; reachable: true; models: string[] }> {
  const row = await authorizeProvider(deps.db, membership, id, 'manager');
  const sealed = await store.findSealedKey(deps.db, membership.organizationId, id);
  if (!sealed) throw providerNotFound();
  const apiKey = deps.secrets.decrypt(sealed);
  const call = modelListCall({ provider: row.provider, baseUrl: row.base_url, apiVersion: row.api_version, apiKey });
  let reply: ProviderReply;
  try {
    reply = await getJson(deps, call.url, call.headers, deps.settings.llmProviderTimeoutMs);
  } catch (err) {
    if (err instanceof EgressFailure) throw providerError(`The LLM provider ${err.message}.`);
    throw err;
  }
  if (reply.status < 200 || reply.status > 299) throw providerError(failure(reply));
  let body: unknown;
  try {
    body = JSON.parse(reply.text());
  } catch {
    throw providerError(`The LLM provider answered HTTP ${reply.status} with a body that is not JSON.`);
  }
  const models = parseModelList(row.provider, body);
  if (!models) throw providerError(`The LLM provider answered HTTP ${reply.status} without a model list.`);
  return { ok: true, reachable: true, models };
}
