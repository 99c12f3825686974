import { RecordJsonCache, SERIALIZE_SLICE } from '../../src/audit-streams/serialize';
import type { SinkBatch } from '../../src/audit-streams/sinks';
import { httpsSink } from '../../src/audit-streams/sinks/https';
import { splunkHecSink } from '../../src/audit-streams/sinks/splunk-hec';
import { datadogSink } from '../../src/audit-streams/sinks/datadog';
import type { Outbound } from '../../src/outbound';
import type { StreamRecord } from '../../src/audit';

/**
 * A stream batch's records are serialized once for every stream of the process and in slices that
 * yield to the event loop (docs/audit.md#streams): a batch of 500 entries made in one synchronous
 * piece held every request of the process for its duration. The sinks' bodies stay the text they
 * were (JSON.stringify of the same objects).
 */
const entry = (i: number): StreamRecord => ({
  id: `aud_01jf${String(i).padStart(22, '0')}`,
  organizationId: 'org_01jfabcdefghjkmnpqrstvwxyz0',
  action: 'team.created',
  actor: { type: 'member', id: 'usr_01jfabcdefghjkmnpqrstvwxyz0', memberId: 'mem_01jfabcdefghjkmnpqrstvwxyz0' },
  target: { type: 'team', id: `tem_01jf${String(i).padStart(22, '0')}` },
  changes: { name: { from: null, to: `T "${i}" \u00e9\n` }, memberIds: { from: null, to: [] } },
  requestId: `req-${i}`,
  ip: '127.0.0.1',
  userAgent: 'test/1.0',
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
});
const checkpoint = (i: number): StreamRecord => ({ kind: 'checkpoint', id: `ack_${i}`, note: `cp.example.test/audit/x\n${i}\n\n— sig\n`, count: i, createdAt: new Date(Date.UTC(2026, 0, 1)).toISOString() });

const records = (n: number) => Array.from({ length: n }, (_, i) => (i % 7 === 6 ? checkpoint(i) : entry(i)));

describe('a stream batch is serialized', () => {
  it('in slices that yield to the event loop: a batch of 500 lets other callbacks run while it is made', async () => {
    const batch = records(500);
    let ticks = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      ticks++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const json = await new RecordJsonCache().serialize(batch);
    running = false;
    expect(json).toEqual(batch.map((r) => JSON.stringify(r)));
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(500 / SERIALIZE_SLICE) - 1);
  });

  it('once for every stream of the process: a second stream over the same records reuses the text', async () => {
    const cache = new RecordJsonCache();
    const batch = records(200);
    const first = await cache.serialize(batch.slice(0, 150));
    const spy = jest.spyOn(JSON, 'stringify');
    try {
      const second = await cache.serialize(batch.slice(50));
      expect(second.slice(0, 100)).toEqual(first.slice(50));
      expect(second).toEqual(batch.slice(50).map((r) => JSON.stringify(r)));
      // 50 made now (and 150 by the expectation above): none of the 100 already made.
      expect(spy.mock.calls.length).toBe(50 + 150);
    } finally {
      spy.mockRestore();
    }
  });

  it('in a bounded cache, oldest out', async () => {
    const cache = new RecordJsonCache(100);
    await cache.serialize(records(250));
    expect(cache.size).toBe(100);
  });
});

describe('sink bodies made from the serialized records', () => {
  const sent: { url: string; body: string }[] = [];
  const outbound = {
    policy: null,
    request: (url: string, init: { body?: string }) => {
      sent.push({ url, body: init.body ?? '' });
      return Promise.resolve({ status: 200, headers: {}, body: Buffer.alloc(0) });
    },
  } as unknown as Outbound;
  const batchOf = async (config: Record<string, unknown>, secrets: SinkBatch['secrets']): Promise<SinkBatch> => {
    const recs = records(30);
    return { streamId: 'ast_1', organizationId: 'org_1', config, secrets, records: recs, json: await new RecordJsonCache().serialize(recs), outbound, timeoutMs: 1000, now: new Date() };
  };

  it('are the text JSON.stringify made of the whole objects', async () => {
    const https = await batchOf({ url: 'https://siem.example.test/in' }, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
    expect(await httpsSink(https)).toEqual({ ok: true });
    expect(sent.pop()!.body).toBe(JSON.stringify({ records: https.records }));

    for (const index of ['main', undefined]) {
      const hec = await batchOf({ url: 'https://hec.example.test/services/collector/event', ...(index ? { index } : {}) }, { token: 't' });
      expect(await splunkHecSink(hec)).toEqual({ ok: true });
      const old = hec.records.map((record) => JSON.stringify({ time: new Date(record.createdAt).getTime() / 1000, source: 'org-control-plane', sourcetype: '_json', ...(index ? { index } : {}), event: record })).join('\n');
      expect(sent.pop()!.body).toBe(old);
    }

    const dd = await batchOf({ site: 'datadoghq.eu' }, { apiKey: 'k' });
    expect(await datadogSink(dd)).toEqual({ ok: true });
    const old = JSON.stringify(dd.records.map((record) => ({ ddsource: 'org-control-plane', service: 'org-control-plane-audit', ddtags: 'organization_id:org_1', message: JSON.stringify(record) })));
    expect(sent.pop()!.body).toBe(old);
  });
});
