import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { serializeBody } from '../lib/json-text';
import { shapeForRoute } from './dialects';
import type { HttpResult } from '../contract';

/**
 * The one exit of every answer of an operation (ARCHITECTURE.md, "A request's path"): the
 * dialect's shape for its route, headers, then a stream, an empty body or JSON written in one piece.
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
  // As Express's res.json, with JSON text made elsewhere spliced in (src/lib/json-text.ts).
  const text = serializeBody(result.body);
  const type = res.getHeader('Content-Type');
  if ((type === undefined || PLAIN_JSON_TYPES.has(type as string)) && !mayBeFresh(res)) {
    // What res.send does for such an answer, without its steps that cannot apply: it turns a body
    // of 1,000 characters or more into a Buffer, which Node then writes as a second chunk after
    // the headers, where a string goes out with them in one write (GET /v1/org's ~3 KB answer).
    res.statusCode = result.status;
    res.setHeader('Content-Type', `${(type as string | undefined) ?? 'application/json'}; charset=utf-8`);
    res.setHeader('Content-Length', String(Buffer.byteLength(text)));
    res.end(text);
    return;
  }
  if (!type) res.set('Content-Type', 'application/json');
  res.status(result.status).send(text);
}

/** Content types res.send would only give `; charset=utf-8`. */
const PLAIN_JSON_TYPES = new Set(['application/json', 'application/scim+json']);

/**
 * When res.send's freshness check (a 304 for a conditional request) or its HEAD handling could
 * apply: the answer has a validator (templates set an ETag), or the request is conditional or HEAD.
 */
function mayBeFresh(res: Response): boolean {
  const req = res.req;
  return req.method === 'HEAD' || res.hasHeader('ETag') || res.hasHeader('Last-Modified') || req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined;
}
