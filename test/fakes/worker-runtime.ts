import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local worker runtime speaking the runtime protocol: `GET /runtime/versions` with
 * `Authorization: Bearer <hostToken>`. `mode` picks how it answers, so one server covers the
 * success and every failure the service must turn into a 502.
 */
export type RuntimeMode =
  | { kind: 'ok'; body: unknown }
  | { kind: 'status'; status: number; body?: string }
  | { kind: 'text'; body: string }
  | { kind: 'hang' }
  | { kind: 'hang-body' }
  | { kind: 'huge'; bytes: number; declareLength: boolean }
  | { kind: 'redirect'; location: string };

export interface FakeRuntime {
  url: string;
  mode: RuntimeMode;
  /** Authorization headers and paths of every request received. */
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export async function startFakeRuntime(initial: RuntimeMode = { kind: 'ok', body: { version: '1.0.0' } }): Promise<FakeRuntime> {
  const hanging = new Set<http.ServerResponse>();
  const fake: Partial<FakeRuntime> & { mode: RuntimeMode; requests: FakeRuntime['requests'] } = { mode: initial, requests: [] };
  const server = http.createServer((req, res) => {
    fake.requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
    // The runtime may live under a base path: `{base}/runtime/versions`.
    if (!(req.url ?? '').split('?')[0]!.endsWith('/runtime/versions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
      return;
    }
    const mode = fake.mode;
    switch (mode.kind) {
      case 'ok':
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(mode.body));
        return;
      case 'status':
        res.writeHead(mode.status, { 'content-type': 'application/json' }).end(mode.body ?? '{"error":"boom"}');
        return;
      case 'text':
        res.writeHead(200, { 'content-type': 'text/plain' }).end(mode.body);
        return;
      case 'hang':
        hanging.add(res);
        return;
      case 'hang-body':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"version":');
        hanging.add(res);
        return;
      case 'redirect':
        res.writeHead(302, { location: mode.location }).end();
        return;
      case 'huge': {
        const headers: Record<string, string | number> = { 'content-type': 'application/json' };
        if (mode.declareLength) headers['content-length'] = mode.bytes;
        res.writeHead(200, headers);
        // A valid JSON object, streamed in chunks: `{"pad":"xxxx…"}`.
        const chunk = 'x'.repeat(64 * 1024);
        let sent = 0;
        res.write('{"pad":"');
        sent += 8;
        const pump = () => {
          while (sent + 2 < mode.bytes) {
            const part = chunk.slice(0, Math.min(chunk.length, mode.bytes - 2 - sent));
            sent += part.length;
            if (!res.write(part)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end('"}');
        };
        res.on('error', () => undefined);
        pump();
        return;
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  fake.url = `http://127.0.0.1:${port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake as FakeRuntime;
}

/** A URL on 127.0.0.1 where nothing listens (a port that was just released). */
export async function refusedUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
