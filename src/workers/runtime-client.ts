import { Upstream } from '../lib/errors';

/** Larger replies are refused while streaming, so a runtime cannot make the service buffer without bound. */
export const MAX_RUNTIME_REPLY_BYTES = 1024 * 1024;

const runtimeError = (message: string) => new Upstream('worker_runtime_error', message);

export interface RuntimeCall {
  fetch: typeof fetch;
  runtimeUrl: string;
  hostToken: string;
  timeoutMs: number;
}

/**
 * `GET {runtimeUrl}/runtime/versions` with the worker's host token. The timeout bounds the whole
 * exchange (connect, headers and body). Redirects are not followed: the token must only go to the
 * URL the worker was registered with. Every failure is a 502 `worker_runtime_error`.
 */
export async function fetchRuntimeVersions(call: RuntimeCall): Promise<Record<string, unknown>> {
  let url: URL;
  try {
    url = new URL(call.runtimeUrl);
  } catch {
    throw runtimeError('The worker runtime URL is not a valid URL.');
  }
  // The runtime path goes after any base path; a query string on the base URL is kept.
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/runtime/versions`;
  const signal = AbortSignal.timeout(call.timeoutMs);
  let response: Response;
  try {
    response = await call.fetch(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${call.hostToken}`, accept: 'application/json' },
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    throw runtimeError(describeFailure(err, call.timeoutMs));
  }

  if (response.status < 200 || response.status >= 300) {
    await response.body?.cancel().catch(() => undefined);
    throw runtimeError(`The worker runtime answered HTTP ${response.status}.`);
  }
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > MAX_RUNTIME_REPLY_BYTES) {
    await response.body?.cancel().catch(() => undefined);
    throw runtimeError(`The worker runtime's reply is larger than ${MAX_RUNTIME_REPLY_BYTES} bytes.`);
  }

  const text = await readCapped(response, call.timeoutMs);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw runtimeError('The worker runtime did not answer JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw runtimeError('The worker runtime did not answer a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

async function readCapped(response: Response, timeoutMs: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_RUNTIME_REPLY_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw runtimeError(`The worker runtime's reply is larger than ${MAX_RUNTIME_REPLY_BYTES} bytes.`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof Upstream) throw err;
    throw runtimeError(describeFailure(err, timeoutMs));
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks));
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const name = (err as { name?: string } | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return `The worker runtime did not answer within ${timeoutMs} ms.`;
  const cause = (err as { cause?: { code?: string } } | null)?.cause;
  if (cause?.code === 'ECONNREFUSED') return 'The worker runtime refused the connection.';
  return `The worker runtime could not be reached${cause?.code ? ` (${cause.code})` : ''}.`;
}
