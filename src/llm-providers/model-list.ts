/**
 * Each provider's documented model-list call (docs/templates-and-llm-providers.md#llm-providers): the URL, the headers that carry
 * the key, and where the model ids are in the reply. Only this file knows the protocols.
 */
export type ProviderKind = 'openai' | 'anthropic' | 'azure-openai' | 'google' | 'openai-compatible';

/** Public API bases; azure-openai and openai-compatible have none (their baseUrl is required). */
export const DEFAULT_BASE_URL: Partial<Record<ProviderKind, string>> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
  google: 'https://generativelanguage.googleapis.com',
};

/** Azure OpenAI's GA data-plane version, used when a provider stores no apiVersion. */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
export const ANTHROPIC_VERSION = '2023-06-01';

export function needsBaseUrl(provider: ProviderKind): boolean {
  return DEFAULT_BASE_URL[provider] === undefined;
}

export function effectiveBaseUrl(provider: ProviderKind, baseUrl: string | null): string {
  const base = baseUrl ?? DEFAULT_BASE_URL[provider];
  if (!base) throw new Error(`provider ${provider} has no base URL`);
  return base;
}

export function effectiveApiVersion(provider: ProviderKind, apiVersion: string | null): string | null {
  return apiVersion ?? (provider === 'azure-openai' ? DEFAULT_AZURE_API_VERSION : null);
}

/** `path` appended to the base URL's own path; the base's query string is kept. */
function under(base: string, path: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  return url;
}

export interface ModelListCall {
  url: URL;
  headers: Record<string, string>;
}

export function modelListCall(p: { provider: ProviderKind; baseUrl: string | null; apiVersion: string | null; apiKey: string }): ModelListCall {
  const base = effectiveBaseUrl(p.provider, p.baseUrl);
  const accept = { accept: 'application/json' };
  switch (p.provider) {
    case 'openai':
    case 'openai-compatible':
      return { url: under(base, '/models'), headers: { ...accept, authorization: `Bearer ${p.apiKey}` } };
    case 'anthropic': {
      const url = under(base, '/v1/models');
      url.searchParams.set('limit', '1000');
      return { url, headers: { ...accept, 'x-api-key': p.apiKey, 'anthropic-version': ANTHROPIC_VERSION } };
    }
    case 'azure-openai': {
      const url = under(base, '/openai/models');
      url.searchParams.set('api-version', effectiveApiVersion(p.provider, p.apiVersion)!);
      return { url, headers: { ...accept, 'api-key': p.apiKey } };
    }
    case 'google': {
      const url = under(base, '/v1beta/models');
      url.searchParams.set('pageSize', '1000');
      return { url, headers: { ...accept, 'x-goog-api-key': p.apiKey } };
    }
  }
}

function ids(list: unknown, field: string): string[] | null {
  if (!Array.isArray(list)) return null;
  const out: string[] = [];
  for (const entry of list) {
    const value = entry && typeof entry === 'object' ? (entry as Record<string, unknown>)[field] : undefined;
    if (typeof value !== 'string') return null;
    out.push(value);
  }
  return out;
}

/**
 * Model ids from a model-list reply, or null when the reply is not that provider's shape.
 * OpenAI, compatible servers, Azure and Anthropic answer `{data: [{id}]}`; Google answers
 * `{models: [{name: 'models/…'}]}` and ids are reported without the `models/` prefix.
 */
export function parseModelList(provider: ProviderKind, body: unknown): string[] | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const reply = body as Record<string, unknown>;
  if (provider === 'google') return ids(reply.models, 'name')?.map((name) => name.replace(/^models\//, '')) ?? null;
  return ids(reply.data, 'id');
}
