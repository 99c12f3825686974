import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One local server speaking each provider's documented model-list protocol, under a path prefix
 * per provider (so a provider's baseUrl is `{url}/openai/v1`, `{url}/anthropic`, `{url}/azure`,
 * `{url}/google`):
 * - OpenAI and compatible servers: `GET {base}/models`, `Authorization: Bearer <key>` →
 *   `{object: 'list', data: [{id, object: 'model', created, owned_by}]}`; a wrong key is 401
 *   `{error: {message, type: 'invalid_request_error', code: 'invalid_api_key'}}`.
 * - Anthropic: `GET {base}/v1/models` with `x-api-key` and `anthropic-version` (400 without it) →
 *   `{data: [{type: 'model', id, display_name, created_at}], has_more, first_id, last_id}`; a wrong
 *   key is 401 `{type: 'error', error: {type: 'authentication_error', message}}`.
 * - Azure OpenAI: `GET {endpoint}/openai/models?api-version=…` with `api-key` (404 without
 *   api-version) → `{object: 'list', data: [{id, object: 'model', status: 'succeeded'}]}`; a wrong
 *   key is 401 `{error: {code: '401', message: 'Access denied …'}}`.
 * - Google: `GET {base}/v1beta/models` with `x-goog-api-key` → `{models: [{name: 'models/…'}]}`;
 *   a wrong key is 400 `{error: {code: 400, status: 'INVALID_ARGUMENT', message}}`.
 * Error bodies echo the key they refused in full (worse than the real ones, which mask most of
 * it), so a service that quoted a provider's body would leak it and fail the tests.
 */
export type Mode = 'ok' | 'rate_limited' | 'hang' | 'html' | 'server_error';

export interface FakeLlm {
  url: string;
  /** The key each provider accepts. */
  keys: Record<'openai' | 'anthropic' | 'azure' | 'google', string>;
  mode: Mode;
  requests: { path: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

export async function startFakeLlm(keys: FakeLlm['keys']): Promise<FakeLlm> {
  const hanging = new Set<http.ServerResponse>();
  const fake = { keys, mode: 'ok' as Mode, requests: [] as FakeLlm['requests'] };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    fake.requests.push({ path: `${url.pathname}${url.search}`, headers: req.headers });
    if (fake.mode === 'hang') return void hanging.add(res);
    if (fake.mode === 'html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Gateway says hello</body></html>');
    if (fake.mode === 'server_error') return void res.writeHead(503, { 'content-type': 'text/html' }).end('<html>upstream down</html>');
    const limited = fake.mode === 'rate_limited';
    const path = url.pathname;
    if (path === '/openai/v1/models') {
      const sent = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (sent !== fake.keys.openai) return json(res, 401, { error: { message: `Incorrect API key provided: ${sent}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
      if (limited) return json(res, 429, { error: { message: `Rate limit reached for key ${sent}`, type: 'requests', code: 'rate_limit_exceeded' } }, { 'retry-after': '20' });
      return json(res, 200, { object: 'list', data: ['gpt-4o', 'gpt-4o-mini'].map((id) => ({ id, object: 'model', created: 1715367049, owned_by: 'system' })) });
    }
    if (path === '/anthropic/v1/models') {
      if (!req.headers['anthropic-version']) return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } });
      const sent = String(req.headers['x-api-key'] ?? '');
      if (sent !== fake.keys.anthropic) return json(res, 401, { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${sent}` } });
      if (limited) return json(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' } }, { 'retry-after': '7' });
      const data = ['claude-sonnet-4-20250514', 'claude-3-5-haiku-20241022'].map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-05-14T00:00:00Z' }));
      return json(res, 200, { data, has_more: false, first_id: data[0]!.id, last_id: data[1]!.id });
    }
    if (path === '/azure/openai/models') {
      if (!url.searchParams.get('api-version')) return json(res, 404, { error: { code: '404', message: 'Resource not found' } });
      const sent = String(req.headers['api-key'] ?? '');
      if (sent !== fake.keys.azure) {
        return json(res, 401, { error: { code: '401', message: `Access denied due to invalid subscription key ${sent} or wrong API endpoint.` } });
      }
      if (limited) return json(res, 429, { error: { code: '429', message: 'Requests have exceeded the call rate limit.' } }, { 'retry-after': '3' });
      return json(res, 200, { object: 'list', data: ['gpt-4o-2024-08-06', 'text-embedding-3-large'].map((id) => ({ id, object: 'model', status: 'succeeded', created_at: 1723075200 })) });
    }
    if (path === '/google/v1beta/models') {
      const sent = String(req.headers['x-goog-api-key'] ?? '');
      if (sent !== fake.keys.google) return json(res, 400, { error: { code: 400, message: `API key not valid: ${sent}. Please pass a valid API key.`, status: 'INVALID_ARGUMENT' } });
      if (limited) return json(res, 429, { error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } });
      return json(res, 200, { models: ['gemini-2.5-pro', 'gemini-2.5-flash'].map((id) => ({ name: `models/${id}`, displayName: id, supportedGenerationMethods: ['generateContent'] })) });
    }
    json(res, 404, { error: { message: `Unknown path ${path}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
