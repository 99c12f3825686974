import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Splunk HTTP Event Collector (`/services/collector/event`), checking what HEC checks and
 * answering as HEC answers (Splunk's "Format events for HTTP Event Collector" and "Troubleshoot
 * HTTP Event Collector" pages): `Authorization: Splunk <token>` (missing: 401 code 2, not the
 * Splunk scheme: 401 code 3, an unknown token: 403 code 4); the body one or more JSON event
 * objects, concatenated (whitespace between them allowed), each with a non-empty `event`
 * (missing: 400 code 12, blank: 400 code 13), `time` if present a number of epoch seconds, and
 * `index` if present one the token may write to (else 400 code 7). Accepted: 200
 * `{"text":"Success","code":0}`. `refuse` makes it answer a status instead, once per call.
 */
export interface HecEvent {
  time?: number;
  index?: string;
  source?: string;
  sourcetype?: string;
  event: Record<string, unknown>;
}

export interface FakeHec {
  url: string;
  token: string;
  allowedIndexes: Set<string>;
  /** Events accepted, in the order received. */
  events: HecEvent[];
  requests: number;
  /** Statuses to answer next (503 …), before checking anything. */
  refuse: number[];
  close(): Promise<void>;
}

/** Splits concatenated JSON objects (HEC's batch format) without requiring newlines between them. */
function splitObjects(body: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === '}') {
      if (--depth === 0) out.push(JSON.parse(body.slice(start, i + 1)));
    } else if (depth === 0 && !/\s/.test(c!)) throw new Error('not an event object');
  }
  if (depth !== 0) throw new Error('truncated');
  return out;
}

export async function startFakeHec(token: string, allowedIndexes: string[] = ['main']): Promise<FakeHec> {
  const fake: FakeHec = { url: '', token, allowedIndexes: new Set(allowedIndexes), events: [], requests: 0, refuse: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      fake.requests++;
      const answer = (status: number, text: string, code: number) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ text, code }));
      };
      const refusal = fake.refuse.shift();
      if (refusal !== undefined) return answer(refusal, 'Server is busy', 9);
      if (req.method !== 'POST' || req.url !== '/services/collector/event') return answer(404, 'The requested URL was not found on this server.', 404);
      const auth = req.headers.authorization;
      if (!auth) return answer(401, 'Token is required', 2);
      const m = /^Splunk (.+)$/.exec(auth);
      if (!m) return answer(401, 'Invalid authorization', 3);
      if (m[1] !== fake.token) return answer(403, 'Invalid token', 4);
      let objects: unknown[];
      try {
        objects = splitObjects(body);
      } catch {
        return answer(400, 'Invalid data format', 6);
      }
      if (objects.length === 0) return answer(400, 'No data', 5);
      for (const o of objects) {
        const e = o as Record<string, unknown>;
        if (!('event' in e)) return answer(400, 'Event field is required', 12);
        if (e.event === '' || e.event === null || (typeof e.event === 'object' && Object.keys(e.event as object).length === 0)) return answer(400, 'Event field cannot be blank', 13);
        if (e.time !== undefined && typeof e.time !== 'number') return answer(400, 'Invalid data format', 6);
        if (e.index !== undefined && !fake.allowedIndexes.has(e.index as string)) return answer(400, 'Incorrect index', 7);
      }
      fake.events.push(...(objects as HecEvent[]));
      answer(200, 'Success', 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/collector/event`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
