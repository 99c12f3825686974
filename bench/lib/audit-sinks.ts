import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startFakeHec, type FakeHec } from '../../test/fakes/splunk-hec';

/** An audit stream's record as sinks receive it: an entry (with its id) or a checkpoint. */
interface StreamRecord {
  id: string;
  kind?: string;
}

/** A local receiver for an https audit stream: each POST kept as received, checked after the load. */
async function startHttpsSink(): Promise<{ url: string; received: { headers: Record<string, string>; body: string }[]; close(): Promise<void> }> {
  const received: { headers: Record<string, string>; body: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      received.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siem`,
    received,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
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
 * Two audit streams of one organization on sinks in this process: `https` (a receiver verifying
 * Standard Webhooks signatures with the `standardwebhooks` package, after the load) and Splunk HEC
 * (test/fakes/splunk-hec.ts: the `Splunk` scheme, concatenated events, HEC's answers).
 */
export async function startAuditSinks(serviceUrl: string, adminToken: string) {
  const https = await startHttpsSink();
  const hecToken = 'bench-hec-0123456789abcdef';
  const hec: FakeHec = await startFakeHec(hecToken, ['main']);
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
      let badSignatures = 0;
      const httpsRecords: StreamRecord[] = [];
      for (const r of https.received) {
        try {
          httpsRecords.push(...(new Webhook(httpsStream.secret!).verify(r.body, r.headers) as { records: StreamRecord[] }).records);
        } catch {
          badSignatures++;
        }
      }
      const hecRecords = hec.events.map((e) => e.event as unknown as StreamRecord);
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
        out.push({ type, entries: entries.length, checkpoints: records.length - entries.length, missing: rows.length - next, outOfOrder, duplicates, badSignatures: type === 'https' ? badSignatures : 0, batches: type === 'https' ? https.received.length : hec.requests });
      }
      return out;
    },
    close: () => Promise.all([https.close(), hec.close()]),
  };
}
