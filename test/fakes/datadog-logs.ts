import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Datadog logs intake (HTTP API v2, `POST /api/v2/logs`), checking what the intake
 * checks (Datadog's "Send logs" API reference): the `DD-API-KEY` header (missing or unknown: 403
 * `{"errors":["Forbidden"]}`), `Content-Type: application/json`, a body that is a JSON array of
 * log objects (or one object) of at most 1000 entries and 5 MB (413 otherwise), each log at most
 * 1 MB. Accepted: 202 `{}`. `refuse` makes it answer a status instead, once per call.
 */
export interface DatadogLog {
  ddsource?: string;
  ddtags?: string;
  hostname?: string;
  service?: string;
  message?: string;
  [attribute: string]: unknown;
}

export interface FakeDatadog {
  url: string;
  apiKey: string;
  logs: DatadogLog[];
  requests: number;
  refuse: number[];
  close(): Promise<void>;
}

const MAX_PAYLOAD = 5 * 1024 * 1024;
const MAX_LOG = 1024 * 1024;
const MAX_ENTRIES = 1000;

export async function startFakeDatadog(apiKey: string): Promise<FakeDatadog> {
  const fake: FakeDatadog = { url: '', apiKey, logs: [], requests: 0, refuse: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      fake.requests++;
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const refusal = fake.refuse.shift();
      if (refusal !== undefined) return answer(refusal, { errors: ['Service Unavailable'] });
      if (req.method !== 'POST' || req.url !== '/api/v2/logs') return answer(404, { errors: ['Not Found'] });
      if (req.headers['dd-api-key'] !== fake.apiKey) return answer(403, { errors: ['Forbidden'] });
      if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return answer(400, { errors: ['Bad Request'] });
      const raw = Buffer.concat(chunks);
      if (raw.length > MAX_PAYLOAD) return answer(413, { errors: ['Payload Too Large'] });
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw.toString('utf8'));
      } catch {
        return answer(400, { errors: ['Bad Request'] });
      }
      const logs = Array.isArray(parsed) ? parsed : [parsed];
      if (logs.length > MAX_ENTRIES) return answer(413, { errors: ['Payload Too Large'] });
      for (const log of logs) {
        if (log === null || typeof log !== 'object' || Array.isArray(log)) return answer(400, { errors: ['Bad Request'] });
        if (Buffer.byteLength(JSON.stringify(log)) > MAX_LOG) return answer(413, { errors: ['Payload Too Large'] });
      }
      fake.logs.push(...(logs as DatadogLog[]));
      answer(202, {});
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2/logs`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
