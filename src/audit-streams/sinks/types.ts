import type { Outbound } from '../../outbound';
import type { StreamRecord } from '../../audit';
import type { StreamSecrets } from '../config';

/** What a sink is handed for one batch. */
export interface SinkBatch {
  streamId: string;
  organizationId: string;
  config: Record<string, unknown>;
  secrets: StreamSecrets;
  /** In chain order; never empty. */
  records: StreamRecord[];
  /** `JSON.stringify` of each record, in the same order (made once for all the organization's streams: src/audit-streams/serialize.ts). */
  json: readonly string[];
  outbound: Outbound;
  timeoutMs: number;
  now: Date;
}

/**
 * A sink's answer to one batch: accepted (the cursor advances), refused its credentials (401/403:
 * the stream pauses until its config changes) or failed (retried with backoff).
 */
export type SinkOutcome = { ok: true } | { ok: false; refused: boolean; error: string };

export type Sink = (batch: SinkBatch) => Promise<SinkOutcome>;
