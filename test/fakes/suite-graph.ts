import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { json, readBody } from './oauth-server';

/**
 * A local server speaking the Graph chat-message protocol: `POST /chats/{chatId}/messages` with a
 * bearer token answers a chatMessage (201), `GET /me` the signed-in user. Errors use Graph's
 * `{error: {code, message}}` body. Tests can queue a failure (status, Retry-After, a delay).
 */
export interface GraphUser {
  id: string;
  displayName: string;
}

export interface NextReply {
  status: number;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export class FakeGraphServer {
  private server!: Server;
  baseUrl = '';
  readonly chats = new Set<string>();
  readonly received: { chatId: string; token: string; body: unknown }[] = [];
  next: NextReply[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  /** `isValidToken` decides which bearer tokens are accepted (the identity fake's issued ones). */
  constructor(
    private readonly isValidToken: (token: string) => boolean,
    private readonly user: GraphUser = { id: '7d6f0c1e-0000-4000-8000-000000000001', displayName: 'Ada Lovelace' },
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => {
        if (!res.headersSent) res.statusCode = 500;
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1.0`;
    return this;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A slow reply; stop() cancels it so no timer outlives the test. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const queued = this.next.shift();
    if (queued) {
      if (queued.delayMs) await this.sleep(queued.delayMs);
      if (res.destroyed) return;
      if (queued.raw !== undefined) {
        res.writeHead(queued.status, { 'content-type': 'application/json', ...queued.headers });
        res.end(queued.raw);
        return;
      }
      return json(res, queued.status, queued.body ?? {}, queued.headers);
    }
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.isValidToken(token)) {
      return json(res, 401, { error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty or invalid.' } });
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/v1\.0/, '');
    if (req.method === 'GET' && path === '/me') return json(res, 200, { id: this.user.id, displayName: this.user.displayName });
    const match = /^\/chats\/([^/]+)\/messages$/.exec(path);
    if (req.method !== 'POST' || !match) return json(res, 404, { error: { code: 'UnknownError', message: 'No such route.' } });
    const chatId = decodeURIComponent(match[1]!);
    if (!this.chats.has(chatId)) return json(res, 404, { error: { code: 'NotFound', message: 'Resource not found.' } });
    const parsed = JSON.parse(body) as { body?: { contentType?: string; content?: string } };
    if (parsed.body?.contentType !== 'text' || typeof parsed.body.content !== 'string') {
      return json(res, 400, { error: { code: 'BadRequest', message: 'Invalid body.' } });
    }
    this.received.push({ chatId, token, body: parsed });
    const id = String(Date.now()) + randomBytes(2).readUInt16BE(0);
    return json(res, 201, {
      '@odata.context': `https://graph.example/v1.0/$metadata#chats('${chatId}')/messages/$entity`,
      id,
      replyToId: null,
      etag: id,
      messageType: 'message',
      createdDateTime: '2026-11-22T10:00:00.123Z',
      lastModifiedDateTime: '2026-11-22T10:00:00.123Z',
      chatId,
      importance: 'normal',
      from: { application: null, device: null, user: { '@odata.type': '#microsoft.graph.teamworkUserIdentity', id: this.user.id, displayName: this.user.displayName, userIdentityType: 'aadUser' } },
      body: { contentType: 'text', content: parsed.body.content },
      webUrl: `https://suite.example/l/message/${encodeURIComponent(chatId)}/${id}`,
      attachments: [],
      mentions: [],
    });
  }
}
