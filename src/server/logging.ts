import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import pino, { type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { metrics, methodLabel, UNMATCHED_ROUTE } from '../observability/metrics';
import { tracing } from '../observability/tracing';

/**
 * The service's logger, on pino's default destination: stdout, each line written as it is logged,
 * so nothing is pending when the process exits. An asynchronous destination and a request log of
 * our own instead of pino-http bought under 10 % of bench scenario 1's CPU per request together
 * (A/B in one run against this file), so the library's path is the one kept.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const traced = tracing;
  const options: pino.LoggerOptions = {
    level,
    // While tracing is on, every line carries the active span's trace_id and span_id.
    ...(traced ? { mixin: () => traced.logIds() } : {}),
    // Defence in depth: nothing below logs headers or bodies, but if a future line does, these go.
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-worker-token"]', 'req.headers["x-bootstrap-token"]', 'req.headers.cookie', '*.password', '*.token', '*.apiKey', '*.clientSecret'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

const GIVEN_ID = /^[\w.-]{1,64}$/;

type Locals = ServerResponse & { locals?: Record<string, unknown> };
/** The line pino-http made, with the matched route and operation added (to the same object: a copy of it cost a spread per request). */
const withRoute = (res: ServerResponse, value: Record<string, unknown>) => {
  value.route = (res as Locals).locals?.route as string | undefined;
  value.operationId = (res as Locals).locals?.operationId as string | undefined;
  return value;
};

/**
 * One line per request (pino-http): id, method, path (never the query string: OAuth callbacks
 * carry codes there), matched route, status and duration. No headers, no bodies. `req.log` is the
 * request's child logger, its lines bound to `req: {id, method, path}`.
 */
export function requestLogger(logger: Logger) {
  const http = pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && GIVEN_ID.test(given) ? given : randomUUID();
      res.setHeader('x-request-id', id);
      return id;
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessObject: (_req, res, value: Record<string, unknown>) => withRoute(res, value),
    customErrorObject: (_req, res, _err, value: Record<string, unknown>) => withRoute(res, value),
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, path: req.url.split('?')[0] }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
    },
    wrapSerializers: false,
  });
  if (!metrics) return http;
  const observed = metrics;
  return (req: Request, res: Response, next: NextFunction): void => {
    const startedAt = performance.now();
    res.once('close', () => {
      const route = res.locals.route as string | undefined;
      // The route template (never the path with its ids) and the operation: bounded label values.
      observed.httpDuration.observe({
        http_request_method: methodLabel(req.method),
        http_route: route ? route.slice(route.indexOf(' ') + 1) : UNMATCHED_ROUTE,
        http_response_status_code: res.statusCode,
        operation_id: (res.locals.operationId as string | undefined) ?? '',
      }, (performance.now() - startedAt) / 1000);
    });
    http(req, res, next);
  };
}
