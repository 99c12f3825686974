import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Agent } from 'undici';
import { EgressPolicy } from './policy';
import { lazy } from '../lib/lazy';
import { metrics } from '../observability/metrics';

// Loaded on the first outbound call: most processes make none for a long time (src/lib/lazy.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const undici = lazy(() => require('undici') as typeof import('undici'));

export type OutboundFailure = 'not_allowed' | 'invalid_url' | 'timeout' | 'refused' | 'unreachable' | 'too_large';

/** Why a call to a tenant URL failed. `message` is safe to show (no secret, no internal detail). */
export class OutboundError extends Error {
  constructor(readonly kind: OutboundFailure, message: string) {
    super(message);
  }
}

export interface OutboundRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** Bounds the whole exchange: connect, headers and body. */
  timeoutMs: number;
  /** Larger replies are refused while streaming. */
  maxBytes: number;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text(): string;
}

export interface Outbound {
  readonly policy: EgressPolicy;
  request(url: string | URL, init: OutboundRequest): Promise<OutboundResponse>;
}

/** Marks a refusal made inside the connect-time lookup, so it can be told from network errors. */
class RefusedAddress extends Error {
  readonly code = 'ERR_OUTBOUND_ADDRESS_NOT_ALLOWED';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * net.connect's `lookup`, checking every resolved address before the socket connects: a name is
 * resolved once, checked, and the checked address is the one connected to (no DNS rebinding).
 */
function checkedLookup(policy: EgressPolicy, resolve: LookupFunction): LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    resolve(hostname, { ...options, all: true }, (err, resolved) => {
      if (err) return callback(err, '');
      const addresses = resolved as unknown as dns.LookupAddress[];
      for (const entry of addresses) {
        const refusal = policy.refusal(entry.address);
        if (refusal) return callback(new RefusedAddress(`${hostname} resolves to ${refusal.replace(/^the address /, '')}`), '');
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as LookupFunction;
}

export interface OutboundOptions {
  allowedNetworks?: readonly string[];
  /** DNS resolution (tests resolve names of their own); Node's dns.lookup by default. */
  lookup?: LookupFunction;
  /** Authorities trusted instead of Node's store (tests' own HTTPS servers); in production NODE_EXTRA_CA_CERTS adds one to the store. */
  ca?: string;
}

/** One client per process: a connection pool whose every connection went through the policy. */
export function createOutbound(options: OutboundOptions = {}): Outbound {
  const policy = new EgressPolicy(options.allowedNetworks ?? []);
  const lookup = checkedLookup(policy, options.lookup ?? (dns.lookup as LookupFunction));
  let agent: Agent | undefined;
  const dispatcher = () => (agent ??= new (undici().Agent)({ connect: { lookup, ...(options.ca ? { ca: options.ca } : {}) } }));

  return {
    policy,
    async request(target, init) {
      try {
        return await send(target, init);
      } catch (err) {
        // The egress policy's refusals (never the URL itself: a label carries the reason only).
        if (err instanceof OutboundError && (err.kind === 'not_allowed' || err.kind === 'invalid_url')) metrics?.outboundRefused.inc({ reason: err.kind });
        throw err;
      }
    },
  };

  async function send(target: string | URL, init: OutboundRequest): Promise<OutboundResponse> {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw new OutboundError('invalid_url', 'the URL is not valid');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('invalid_url', 'the URL is not http(s)');
    if (url.username || url.password) throw new OutboundError('invalid_url', 'the URL carries credentials');
    // An IP literal is never looked up, so it is checked here; names are checked at connect time.
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (/^[\d.]+$/.test(host) || host.includes(':')) {
      const refusal = policy.refusal(host);
      if (refusal) throw new OutboundError('not_allowed', refusal);
    }
    const signal = AbortSignal.timeout(init.timeoutMs);
    try {
      // undici's request never follows redirects: a 3xx comes back as it is.
      const res = await undici().request(url, { dispatcher: dispatcher(), method: init.method ?? 'GET', headers: init.headers, body: init.body, signal });
      const declared = Number(res.headers['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > init.maxBytes) {
        res.body.destroy();
        throw new OutboundError('too_large', `the reply is larger than ${init.maxBytes} bytes`);
      }
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of res.body) {
        total += (chunk as Buffer).byteLength;
        if (total > init.maxBytes) {
          res.body.destroy();
          throw new OutboundError('too_large', `the reply is larger than ${init.maxBytes} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      const body = Buffer.concat(chunks);
      return { status: res.statusCode, headers: res.headers, body, text: () => body.toString('utf8') };
    } catch (err) {
      throw toOutboundError(err, init.timeoutMs);
    }
  }
}

function toOutboundError(err: unknown, timeoutMs: number): OutboundError {
  if (err instanceof OutboundError) return err;
  for (let cause: unknown = err; cause; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof RefusedAddress) return new OutboundError('not_allowed', cause.message);
    const name = (cause as { name?: string }).name;
    if (name === 'TimeoutError' || name === 'AbortError') return new OutboundError('timeout', `no answer within ${timeoutMs} ms`);
    const code = (cause as { code?: string }).code;
    if (code === 'ECONNREFUSED') return new OutboundError('refused', 'the connection was refused');
    if (code && code !== 'UND_ERR_SOCKET' && /^[A-Z_]+$/.test(code)) return new OutboundError('unreachable', `could not be reached (${code})`);
    if (cause === (cause as { cause?: unknown }).cause) break;
  }
  return new OutboundError('unreachable', 'could not be reached');
}
