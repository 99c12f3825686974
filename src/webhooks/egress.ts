import { checkTenantUrl, OutboundError, type Outbound } from '../outbound';

/**
 * Webhooks and the egress policy (docs/egress.md#egress-policy, src/outbound): every stored URL goes
 * through `checkWebhookUrl` (https, or http inside OUTBOUND_ALLOWED_NETWORKS; no credentials; no
 * literal disallowed address) and every delivery through `postWebhook` (the resolved address is
 * checked at connect time, redirects are not followed, the timeout bounds the whole exchange and
 * the reply is read with a cap).
 */
export class DeliveryFailure extends Error {
  constructor(message: string, readonly timedOut = false) {
    super(message);
  }
}

/** The largest reply read (its body is not used); a larger one counts as a failed attempt. */
export const MAX_REPLY_BYTES = 64 * 1024;

export function checkWebhookUrl(outbound: Outbound, value: string, field: string[]): void {
  checkTenantUrl(outbound.policy, value, field, { httpsOnly: true });
}

/** POSTs `body`; answers the reply's status (a 3xx comes back as it is), throws DeliveryFailure when there is none. */
export async function postWebhook(outbound: Outbound, url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  try {
    const res = await outbound.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'org-control-plane-webhooks/1', ...headers },
      body,
      timeoutMs,
      maxBytes: MAX_REPLY_BYTES,
    });
    return res.status;
  } catch (err) {
    throw new DeliveryFailure(err instanceof OutboundError ? err.message : 'the delivery could not be sent', err instanceof OutboundError && err.kind === 'timeout');
  }
}
