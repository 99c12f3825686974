import type { AppDeps } from '../domain/deps';

/**
 * The office suite's chat API (Microsoft Graph protocol): a chatMessage POST to an existing chat,
 * and `/me` for the signed-in member's name and id. Every call is bounded by SUITE_TIMEOUT_MS.
 * Failures are SuiteCallError with a message naming what failed and the suite's status; it never
 * carries the token.
 */
export class SuiteCallError extends Error {
  constructor(message: string, readonly status: number | null) {
    super(message);
  }
}

export interface GraphReply {
  status: number;
  body: Record<string, unknown> | null;
  retryAfter: string | null;
}

const MAX_REPLY_CHARS = 1_048_576;

export async function graphCall(
  deps: AppDeps,
  request: { method: 'GET' | 'POST'; path: string; token: string; body?: unknown },
): Promise<GraphReply> {
  const signal = AbortSignal.timeout(deps.settings.suiteTimeoutMs);
  let status: number;
  let text: string;
  let retryAfter: string | null;
  try {
    const res = await deps.fetch(`${deps.settings.suiteGraphBaseUrl}${request.path}`, {
      method: request.method,
      headers: {
        authorization: `Bearer ${request.token}`,
        accept: 'application/json',
        ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: request.body !== undefined ? JSON.stringify(request.body) : undefined,
      redirect: 'error',
      signal,
    });
    status = res.status;
    retryAfter = res.headers.get('retry-after');
    text = await res.text();
  } catch (err) {
    if (signal.aborted) throw new SuiteCallError(`the suite did not answer within ${deps.settings.suiteTimeoutMs} ms`, null);
    throw new SuiteCallError(`the suite could not be reached (${(err as Error).name})`, null);
  }
  let body: Record<string, unknown> | null = null;
  if (text.length > 0 && text.length <= MAX_REPLY_CHARS) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      body = null;
    }
  }
  return { status, body, retryAfter };
}

/** `answered 403 (Forbidden: ...)` from a Graph error body `{error: {code, message}}`. */
export function describeFailure(reply: GraphReply): string {
  const error = reply.body?.error as { code?: unknown; message?: unknown } | undefined;
  const code = typeof error?.code === 'string' ? error.code.slice(0, 64) : null;
  const message = typeof error?.message === 'string' ? error.message.slice(0, 200) : null;
  const detail = code ? ` (${code}${message ? `: ${message}` : ''})` : '';
  const retry = reply.status === 429 && reply.retryAfter ? `; retry after ${reply.retryAfter.slice(0, 16)} s` : '';
  return `the suite answered ${reply.status}${detail}${retry}`;
}

export interface ChatMessage {
  id: string;
  createdDateTime: string;
  content: string;
  from: { name: string; address: string };
  webUrl: string;
}

/** Graph chatMessage → the interface's chat message; null when the reply lacks what we need. */
export function toChatMessage(body: Record<string, unknown> | null, fallbackFrom: { name: string; address: string }): ChatMessage | null {
  if (!body) return null;
  const msgBody = body.body as { content?: unknown } | undefined;
  if (typeof body.id !== 'string' || typeof body.createdDateTime !== 'string' || typeof msgBody?.content !== 'string') return null;
  const user = (body.from as { user?: { displayName?: unknown; id?: unknown } } | null | undefined)?.user;
  return {
    id: body.id,
    createdDateTime: body.createdDateTime,
    content: msgBody.content,
    from: {
      name: typeof user?.displayName === 'string' ? user.displayName : fallbackFrom.name,
      address: typeof user?.id === 'string' ? user.id : fallbackFrom.address,
    },
    webUrl: typeof body.webUrl === 'string' ? body.webUrl : '',
  };
}
