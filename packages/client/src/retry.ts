// Retries of 429 and 503 answers, honouring Retry-After (delta-seconds or an HTTP date), as a
// fetch wrapper handed to openapi-fetch: the request is cloned before each attempt, so a body is
// sent again intact.

export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** Waits longer than this (from Retry-After) are not made: the answer is returned (default 30 s). */
  maxDelayMs?: number;
  /** The wait when an answer has no usable Retry-After; doubled each attempt (default 500 ms). */
  baseDelayMs?: number;
}

/** Methods that may be sent twice with the same effect (RFC 9110 §9.2.2); others only when asked. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([429, 503]);

/** Milliseconds to wait for a Retry-After value, or undefined when it has none that parses. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // An HTTP date names its month and day (RFC 9110 §5.6.7); Date.parse alone would take "-1" as a year.
  if (!/[A-Za-z]{3}/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A fetch that retries 429/503 answers for idempotent methods (or any method when `always`),
 * at most `attempts` times in all, waiting what Retry-After says.
 */
export function retryingFetch(base: (request: Request) => Promise<Response>, options: RetryOptions, always: boolean): (request: Request) => Promise<Response> {
  const attempts = Math.max(1, Math.floor(options.attempts ?? 3));
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const baseDelayMs = options.baseDelayMs ?? 500;
  return async (request) => {
    const retryable = always || IDEMPOTENT_METHODS.has(request.method.toUpperCase());
    for (let attempt = 1; ; attempt++) {
      const response = await base(attempt < attempts && retryable ? request.clone() : request);
      if (attempt >= attempts || !retryable || !RETRYABLE_STATUS.has(response.status)) return response;
      const wait = retryAfterMs(response.headers.get('retry-after')) ?? baseDelayMs * 2 ** (attempt - 1);
      if (wait > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}
