import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino, { type Logger } from 'pino';
import { pinoHttp } from 'pino-http';

export function createLogger(level: string): Logger {
  return pino({
    level,
    // Defence in depth: nothing below logs headers or bodies, but if a future line does, these go.
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-worker-token"]', 'req.headers["x-bootstrap-token"]', 'req.headers.cookie', '*.password', '*.token', '*.apiKey', '*.clientSecret'],
      censor: '[redacted]',
    },
  });
}

/**
 * One line per request: id, method, path (never the query string: OAuth callbacks carry codes
 * there), matched route, status and duration. No headers, no bodies.
 */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
      res.setHeader('x-request-id', id);
      return id;
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'info'),
    // The matched contract route and operation, set by the router once openapi-backend matched it.
    customSuccessObject: (_req, res, value) => ({ ...value, route: (res as ServerResponse & { locals?: Record<string, unknown> }).locals?.route, operationId: (res as ServerResponse & { locals?: Record<string, unknown> }).locals?.operationId }),
    serializers: {
      req: (req: { id: string; method: string; url: string; raw?: { route?: { path?: string } } }) => ({
        id: req.id,
        method: req.method,
        path: req.url.split('?')[0],
      }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
    },
    wrapSerializers: false,
  });
}
