import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { startFakeHec } from '../../test/fakes/splunk-hec';

/**
 * The two audit-stream sinks of scenario 8 on a worker thread of the bench process: a sink's
 * work (reading a batch of a few hundred records, the fake HEC parsing each event) on the load
 * generator's thread delayed the responses autocannon was timing, and only in the audited rounds.
 * `collect` answers what each received; `close` stops both.
 */
export interface SinksReady {
  httpsUrl: string;
  hecUrl: string;
}
export interface SinksReceived {
  https: { headers: Record<string, string>; body: string }[];
  hecEvents: unknown[];
  hecRequests: number;
}

async function main(): Promise<void> {
  const port = parentPort!;
  const received: SinksReceived['https'] = [];
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
  const hec = await startFakeHec((workerData as { hecToken: string }).hecToken, ['main']);
  port.on('message', (msg: 'collect' | 'close') => {
    if (msg === 'collect') {
      port.postMessage({ https: received, hecEvents: hec.events, hecRequests: hec.requests } satisfies SinksReceived);
      return;
    }
    server.closeAllConnections();
    server.close(() => void hec.close().then(() => port.close()));
  });
  port.postMessage({ httpsUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siem`, hecUrl: hec.url } satisfies SinksReady);
}

void main();
