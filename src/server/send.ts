import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { serializeBody } from '../lib/json-text';
import { shapeForRoute } from './dialects';
import type { HttpResult } from '../contract';

/**
 * The one exit of every answer of an operation (ARCHITECTURE.md, "A request's path"): the
 * dialect's shape for its route, headers, then a stream, an empty body or JSON through Express's res.send.
 */
export function send(res: Response, answer: HttpResult): void {
  if (res.headersSent) return;
  const result = shapeForRoute(res.req.path, answer);
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
  if (result.stream) {
    res.status(result.status);
    // pipeline respects backpressure; a failure half-way (the database gone) ends the response
    // abruptly, which a client sees as a truncated transfer rather than a complete file.
    pipeline(Readable.from(result.stream), res).catch((err: unknown) => {
      (res.req?.log ?? console).error({ err }, 'streamed response failed');
    });
    return;
  }
  if (result.body === undefined || result.status === 204) {
    res.status(result.status).end();
    return;
  }
  // As Express's res.json, with JSON text made elsewhere spliced in (src/lib/json-text.ts): res.send
  // gives the type its charset, sets Content-Length and answers a fresh conditional request with 304.
  if (!res.hasHeader('Content-Type')) res.set('Content-Type', 'application/json');
  res.status(result.status).send(serializeBody(result.body));
}
