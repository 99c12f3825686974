import { Upstream } from '../lib/errors';
import { OutboundError, type Outbound } from '../outbound';

/** Larger replies are refused while streaming, so a runtime cannot make the service buffer without bound. */
export const MAX_RUNTIME_REPLY_BYTES = 1024 * 1024;

const runtimeError = (message: string) => new Upstream('worker_runtime_error', message);

export interface RuntimeCall {
  outbound: Outbound;
  runtimeUrl: string;
  hostToken: string;
  timeoutMs: number;
}

/** How each outbound failure reads in a `worker_runtime_error`. */
function describe(err: OutboundError, timeoutMs: number): string {
  switch (err.kind) {
    case 'timeout':
      return `The worker runtime did not answer within ${timeoutMs} ms.`;
    case 'refused':
      return 'The worker runtime refused the connection.';
    case 'too_large':
      return `The worker runtime's reply is larger than ${MAX_RUNTIME_REPLY_BYTES} bytes.`;
    case 'invalid_url':
      return 'The worker runtime URL is not a valid URL.';
    default:
      return `The worker runtime could not be called: ${err.message}.`;
  }
}

/**
 * `GET {runtimeUrl}/runtime/versions` with the worker's host token, through the egress policy
 * (src/outbound): the resolved address is checked at connect time, the timeout bounds the whole
 * exchange, the reply is capped, and redirects are not followed (the token must only go to the URL
 * the worker was registered with). Every failure is a 502 `worker_runtime_error`.
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
  let text: string;
  try {
    const response = await call.outbound.request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${call.hostToken}`, accept: 'application/json' },
      timeoutMs: call.timeoutMs,
      maxBytes: MAX_RUNTIME_REPLY_BYTES,
    });
    if (response.status < 200 || response.status >= 300) throw runtimeError(`The worker runtime answered HTTP ${response.status}.`);
    text = response.text();
  } catch (err) {
    if (err instanceof OutboundError) throw runtimeError(describe(err, call.timeoutMs));
    throw err;
  }
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
