import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import pino, { type Logger } from 'pino';
import { metrics, methodLabel, UNMATCHED_ROUTE } from '../observability/metrics';
import { tracing } from '../observability/tracing';

declare module 'http' {
  interface IncomingMessage {
    /** The request id: the caller's `x-request-id` when well-formed, else a new UUID (echoed back). */
    id: string;
    /** A logger whose lines carry `req: {id, method, path}`; made on first use (see requestLogger). */
    log: Logger;
  }
}

/**
 * The service's logger. Lines go to stdout through an asynchronous destination: pino's default
 * writes each line with a synchronous write(2) on the event loop, one per request; here a line is
 * handed to a background write at once and lines that arrive while one is in flight go out
 * together. pino flushes what is pending when the process exits (main.ts ends with process.exit),
 * so only a kill -9 can lose the lines of the last write.
 */
export function createLogger(level: string, destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false })): Logger {
  const traced = tracing;
  return pino({
    level,
    // While tracing is on, every line carries the active span's trace_id and span_id.
    ...(traced ? { mixin: () => traced.logIds() } : {}),
    // Defence in depth: nothing below logs headers or bodies, but if a future line does, these go.
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-worker-token"]', 'req.headers["x-bootstrap-token"]', 'req.headers.cookie', '*.password', '*.token', '*.apiKey', '*.clientSecret'],
      censor: '[redacted]',
    },
  }, destination);
}

const GIVEN_ID = /^[\w.-]{1,64}$/;

/** Where a request keeps its log bindings and, once made, its child logger (see requestLogger). */
const LOG_STATE = Symbol('requestLog');
interface LogState {
  bindings: { req: { id: string; method: string; path: string } };
  child?: Logger;
}

/**
 * One line per request: id, method, path (never the query string: OAuth callbacks carry codes
 * there), matched route, status and duration. No headers, no bodies. Lines of the same shape as
 * pino-http's, which this replaced: pino-http built a child logger (serialising the request into
 * its bindings) and two closures for every request; here the child is made only when something
 * logs through `req.log` (errors), and the request line is one call on the process's logger.
 *
 * `req.log` is a getter defined once on the app's request prototype (Express's `app.request`):
 * defining it on each request object instead turned every request into a slow dictionary-mode
 * object for the rest of its life.
 */
export function requestLogger(logger: Logger, requestPrototype: object) {
  // The request line is built here from the id, method, path, status and route only, so the
  // redaction paths (which walk every line's keys) have nothing to find in it: skipped for it.
  const lines = logger.child({}, { redact: { paths: [] } });
  Object.defineProperty(requestPrototype, 'log', {
    configurable: true,
    get(this: { [LOG_STATE]?: LogState }): Logger {
      const state = this[LOG_STATE];
      if (!state) return logger;
      return (state.child ??= logger.child(state.bindings));
    },
  });
  return (req: Request, res: Response, next: NextFunction): void => {
    const startedAt = performance.now();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && GIVEN_ID.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('x-request-id', id);
    const state: LogState = { bindings: { req: { id, method: req.method, path: req.url.split('?')[0]! } } };
    (req as unknown as { [LOG_STATE]: LogState })[LOG_STATE] = state;
    // 'close' comes once per response: after 'finish', or alone when the client hung up mid-answer.
    res.once('close', () => {
      const status = res.statusCode;
      const elapsed = performance.now() - startedAt;
      const route = res.locals.route as string | undefined;
      const operationId = res.locals.operationId as string | undefined;
      const line = { ...state.bindings, res: { status }, responseTime: Math.round(elapsed), route, operationId };
      // The route template (never the path with its ids) and the operation: bounded label values.
      metrics?.httpDuration.observe({
        http_request_method: methodLabel(req.method),
        http_route: route ? route.slice(route.indexOf(' ') + 1) : UNMATCHED_ROUTE,
        http_response_status_code: status,
        operation_id: operationId ?? '',
      }, elapsed / 1000);
      if (status >= 500) lines.error({ ...line, err: new Error(`failed with status code ${status}`) }, 'request errored');
      else lines.info(line, 'request completed');
    });
    next();
  };
}
