import type { Logger } from 'pino';
import type { ErrorObject } from 'ajv';
import { AppError, Invalid, Unavailable, type ErrorDetail } from '../lib/errors';
import { isBadValue, isUnavailable } from '../db/errors';
import type { HttpResult } from './types';

/**
 * The one place errors become responses. AppErrors carry their own status and body; database
 * outages become 503; everything else is a 500 without internals, logged with its stack.
 */
export function errorToResult(err: unknown, logger: Logger): HttpResult {
  if (err instanceof AppError) {
    return { status: err.status, body: err.body(), headers: err.headers() };
  }
  if (isUnavailable(err)) {
    logger.warn({ err: describe(err) }, 'database unavailable');
    const unavailable = new Unavailable();
    return { status: unavailable.status, body: unavailable.body(), headers: { 'Retry-After': '5' } };
  }
  if (isBadValue(err)) {
    // The validator should have refused this value; answer 400 and log so the spec gets a limit.
    logger.warn({ err: describe(err) }, 'database refused a value the validator let through');
    const invalid = Invalid.at(['body'], 'A value is out of range or malformed.');
    return { status: 400, body: invalid.body() };
  }
  logger.error({ err }, 'unhandled error');
  return { status: 500, body: { error: 'internal_error', message: 'An unexpected error occurred.' } };
}

function describe(err: unknown): { message: string; code?: string } {
  return { message: err instanceof Error ? err.message : String(err), code: (err as { code?: string })?.code };
}

const LOCATION: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', headers: 'header' };

/**
 * AJV errors from openapi-backend (`instancePath` like `/requestBody/name`) → the spec's details:
 * `{message, path: ['body', 'name']}`; a missing or extra property names that property.
 */
export function validationDetails(errors: ErrorObject[] | null | undefined): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const error of errors ?? []) {
    const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const params = error.params as { missingProperty?: string; additionalProperty?: string };
    let message = error.message ?? 'is invalid';
    if (params.missingProperty) {
      segments.push(params.missingProperty);
      message = 'is required';
    } else if (params.additionalProperty) {
      segments.push(params.additionalProperty);
      message = 'is not allowed';
    }
    if (segments.length === 0) segments.push('body');
    segments[0] = LOCATION[segments[0]!] ?? segments[0]!;
    const key = `${segments.join('.')}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ message, path: segments });
  }
  return details.length > 0 ? details : [{ message: 'is invalid', path: ['body'] }];
}
