import { OutboundError, type Outbound } from '../../outbound';
import type { SinkOutcome } from './types';

/** The largest reply read from a sink (its body is not used beyond the status). */
const MAX_REPLY_BYTES = 64 * 1024;

/**
 * POSTs one batch through the egress policy (resolved address checked at connect time, no
 * redirects followed, the timeout bounding the whole exchange) and reads the status: 2xx is
 * accepted, 401/403 a refusal of the stream's credentials, anything else a failure to retry.
 */
export async function postBatch(outbound: Outbound, url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SinkOutcome> {
  let status: number;
  try {
    const res = await outbound.request(url, {
      method: 'POST',
      headers: { 'user-agent': 'org-control-plane-audit-streams/1', ...headers },
      body,
      timeoutMs,
      maxBytes: MAX_REPLY_BYTES,
    });
    status = res.status;
  } catch (err) {
    return { ok: false, refused: false, error: err instanceof OutboundError ? err.message : 'the batch could not be sent' };
  }
  if (status >= 200 && status < 300) return { ok: true };
  if (status === 401 || status === 403) return { ok: false, refused: true, error: `the sink refused the stream's credentials (${status})` };
  if (status >= 300 && status < 400) return { ok: false, refused: false, error: `redirect (${status}) not followed` };
  return { ok: false, refused: false, error: `the sink answered ${status}` };
}
