import type { ServerOptions } from 'node:http';

/** How long a connection may take to send its request (settings REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS). */
export interface ServerTimeouts {
  /** REQUEST_TIMEOUT_MS: the whole request (head and body) must arrive within it. */
  requestTimeoutMs: number;
  /** HEADERS_TIMEOUT_MS: a request head must arrive within it, also a connection's first. */
  headersTimeoutMs: number;
}

/**
 * The options every HTTP listener of the process is made with (the API's and the metrics'): a
 * listener made without them keeps Node's defaults, where a connection that never sends a byte
 * stays open 60 to 90 s (docs/protection.md#idle-connections).
 *
 * Node closes a connection whose request head is not in within headersTimeout, counted from the
 * connection's start for its first request (one that never sends a byte gets a 408 and is
 * closed), and a request not complete within requestTimeout. It checks every
 * connectionsCheckingInterval (30 s by default): a short timeout would otherwise let a silent or
 * slow-loris client hold a socket for up to 30 s more.
 */
export function connectionTimeoutOptions(timeouts: ServerTimeouts): Pick<ServerOptions, 'connectionsCheckingInterval' | 'requestTimeout' | 'headersTimeout'> {
  const headersTimeout = Math.min(timeouts.headersTimeoutMs, timeouts.requestTimeoutMs);
  const connectionsCheckingInterval = Math.min(30_000, Math.max(100, Math.floor(headersTimeout / 4)));
  return { connectionsCheckingInterval, requestTimeout: timeouts.requestTimeoutMs, headersTimeout };
}
