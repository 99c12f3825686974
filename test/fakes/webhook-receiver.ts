import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A local webhook receiver. Each request is recorded with its headers and raw body; `verify`
 * checks it with the `standardwebhooks` package (an independent implementation of the Standard
 * Webhooks specification), as a real consumer would. `respond` decides the answer per request
 * (status, a delay, extra headers such as a redirect's location).
 */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface Reply {
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
}

export interface Receiver {
  url(path?: string): string;
  received: Received[];
  respond: (req: Received) => Reply;
  /** Requests being answered right now, by `path webhook-id` (for "never in flight twice"). */
  inFlight: Map<string, number>;
  maxInFlightPerKey: number;
  /** Requests open at once per path (an abandoned request counts until its connection closes). */
  openByPath: Map<string, number>;
  maxOpenByPath: Map<string, number>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const timers = new Set<NodeJS.Timeout>();
  const receiver: Receiver = {
    url: () => '',
    received: [],
    respond: () => ({ status: 200 }),
    inFlight: new Map(),
    maxInFlightPerKey: 0,
    openByPath: new Map(),
    maxOpenByPath: new Map(),
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const entry: Received = { path: req.url ?? '/', headers, body, at: Date.now() };
      receiver.received.push(entry);
      const key = `${entry.path} ${headers['webhook-id']}`;
      const now = (receiver.inFlight.get(key) ?? 0) + 1;
      receiver.inFlight.set(key, now);
      receiver.maxInFlightPerKey = Math.max(receiver.maxInFlightPerKey, now);
      const open = (receiver.openByPath.get(entry.path) ?? 0) + 1;
      receiver.openByPath.set(entry.path, open);
      receiver.maxOpenByPath.set(entry.path, Math.max(open, receiver.maxOpenByPath.get(entry.path) ?? 0));
      let closed = false;
      const release = () => {
        if (closed) return;
        closed = true;
        receiver.inFlight.set(key, (receiver.inFlight.get(key) ?? 1) - 1);
        receiver.openByPath.set(entry.path, (receiver.openByPath.get(entry.path) ?? 1) - 1);
      };
      res.on('close', release);
      const reply = receiver.respond(entry);
      const finish = () => {
        if (res.destroyed) return release();
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
        res.end('{"ok":true}');
      };
      if (reply.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          finish();
        }, reply.delayMs);
        timers.add(t);
      } else finish();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const bound = (server.address() as AddressInfo).port;
  receiver.url = (path = '/hook') => `http://127.0.0.1:${bound}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** Verifies one received request with the standardwebhooks package; returns the parsed payload or throws. */
export function verifyWith(secret: string, received: Received, now?: Date): unknown {
  // The package checks the timestamp against Date.now(); tests move an injected clock instead.
  const spy = now ? jest.spyOn(Date, 'now').mockReturnValue(now.getTime()) : null;
  try {
    return new Webhook(secret).verify(received.body, received.headers);
  } finally {
    spy?.mockRestore();
  }
}

export { freePort } from '../support/service-process';
