import path from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import type { SinksReady, SinksReceived } from './audit-sinks-worker';

/** An audit stream's record as sinks receive it: an entry (with its id) or a checkpoint. */
interface StreamRecord {
  id: string;
  kind?: string;
}

export interface StreamDelivery {
  type: string;
  /** Entries received (duplicates included), checkpoints apart. */
  entries: number;
  checkpoints: number;
  /** Entries of the chain, from the stream's creation entry on, not received. */
  missing: number;
  /** Received entries that are not the next one of the chain nor a re-send of an earlier batch (at least once allows those). */
  outOfOrder: number;
  duplicates: number;
  /** Batches whose Standard Webhooks signature did not verify (https only). */
  badSignatures: number;
  /** Requests the sink received (batches, retries included). */
  batches: number;
}

/**
 * Two audit streams of one organization on sinks in this process, on a worker thread of their own
 * (./audit-sinks-worker.ts): `https` (a receiver verifying Standard Webhooks signatures with the
 * `standardwebhooks` package, after the load) and Splunk HEC (test/fakes/splunk-hec.ts: the
 * `Splunk` scheme, concatenated events, HEC's answers).
 */
export async function startAuditSinks(serviceUrl: string, adminToken: string) {
  const hecToken = 'bench-hec-0123456789abcdef';
  // A worker does not inherit tsx's hooks: it registers them before loading the TypeScript file.
  const file = path.join(__dirname, 'audit-sinks-worker.ts');
  const worker = new Worker(`require('tsx/cjs'); require(${JSON.stringify(file)});`, { eval: true, workerData: { hecToken } });
  const [ready] = (await once(worker, 'message')) as [SinksReady];
  const https = { url: ready.httpsUrl };
  const hec = { url: ready.hecUrl };
  const create = async (body: object) => {
    const res = await fetch(`${serviceUrl}/v1/audit-streams`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST /v1/audit-streams answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as { item: { id: string }; secret?: string };
  };
  const httpsStream = await create({ type: 'https', config: { url: https.url } });
  const hecStream = await create({ type: 'splunk_hec', config: { url: hec.url, token: hecToken, index: 'main' } });
  const status = async (id: string) => {
    const res = await fetch(`${serviceUrl}/v1/audit-streams/${id}/status`, { headers: { authorization: `Bearer ${adminToken}` } });
    return (await res.json()) as { lag: number; state: string; lastError: string | null };
  };
  return {
    /** Waits until both streams have delivered everything written (lag 0), up to `limitMs`. */
    async drained(limitMs: number): Promise<boolean> {
      const deadline = Date.now() + limitMs;
      while (Date.now() < deadline) {
        const [a, b] = await Promise.all([status(httpsStream.item.id), status(hecStream.item.id)]);
        if (a.lag === 0 && b.lag === 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return false;
    },
    /** What each sink received against the organization's chain (read from the database). */
    async check(pool: pg.Pool, organizationId: string): Promise<StreamDelivery[]> {
      worker.postMessage('collect');
      const [received] = (await once(worker, 'message')) as [SinksReceived];
      let badSignatures = 0;
      const httpsRecords: StreamRecord[] = [];
      for (const r of received.https) {
        try {
          httpsRecords.push(...(new Webhook(httpsStream.secret!).verify(r.body, r.headers) as { records: StreamRecord[] }).records);
        } catch {
          badSignatures++;
        }
      }
      const hecRecords = received.hecEvents.map((e) => (e as { event: StreamRecord }).event);
      const out: StreamDelivery[] = [];
      for (const [type, id, records] of [['https', httpsStream.item.id, httpsRecords], ['splunk_hec', hecStream.item.id, hecRecords]] as const) {
        const { rows } = await pool.query<{ id: string }>(
          `SELECT id FROM audit_logs WHERE organization_id = $1 AND seq >= (SELECT seq FROM audit_logs WHERE organization_id = $1 AND action = 'audit_stream.created' AND target_id = $2) ORDER BY seq`,
          [organizationId, id],
        );
        const position = new Map(rows.map((r, i) => [r.id, i]));
        const entries = records.filter((r) => r.kind !== 'checkpoint');
        let next = 0;
        let outOfOrder = 0;
        let duplicates = 0;
        for (const e of entries) {
          const at = position.get(e.id);
          if (at === undefined || at > next) outOfOrder++;
          else if (at < next) duplicates++;
          else next++;
        }
        out.push({ type, entries: entries.length, checkpoints: records.length - entries.length, missing: rows.length - next, outOfOrder, duplicates, badSignatures: type === 'https' ? badSignatures : 0, batches: type === 'https' ? received.https.length : received.hecRequests });
      }
      return out;
    },
    /** Stops both sinks and the worker (the worker ends once its servers have closed). */
    async close(): Promise<void> {
      const exited = once(worker, 'exit');
      worker.postMessage('close');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      await worker.terminate();
    },
  };
}
