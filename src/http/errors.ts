import type { Logger } from 'pino';
import type { ErrorObject } from 'ajv';
import { AppError, InternalError, Invalid, Unavailable, type ErrorDetail } from '../lib/errors';
import { isBadValue, isUnavailable } from '../db/errors';
import type { HttpResult } from './types';
import { isScimErrorBody, scimErrorBody } from '../scim/errors';

/**
 * The one place errors become responses. AppErrors carry their own status and body; database
 * outages become 503; everything else is a 500 without internals, logged with its stack.
 */
export function errorToResult(err: unknown, logger: Logger): HttpResult {
  if (err instanceof AppError) return resultOf(err);
  if (isUnavailable(err)) {
    logger.warn({ err: describe(err) }, 'database unavailable');
    return resultOf(new Unavailable());
  }
  if (isBadValue(err)) {
    // The validator should have refused this value; answer 400 and log so the spec gets a limit.
    logger.warn({ err: describe(err) }, 'database refused a value the validator let through');
    return resultOf(Invalid.at(['body'], 'A value is out of range or malformed.'));
  }
  logger.error({ err }, 'unhandled error');
  return resultOf(new InternalError());
}

/** An error class as the answer it gives. */
export function resultOf(err: AppError): HttpResult {
  const headers = err.headers();
  return Object.keys(headers).length > 0 ? { status: err.status, body: err.body(), headers } : { status: err.status, body: err.body() };
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
    const params = error.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[]; allowedValue?: unknown };
    let message = error.message ?? 'is invalid';
    // Say what is allowed: AJV's "must be equal to one of the allowed values" names none.
    if (error.keyword === 'enum' && params.allowedValues) message = `must be one of: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    else if (error.keyword === 'const') message = `must be ${JSON.stringify(params.allowedValue)}`;
    else if (error.keyword === 'not' && typeof error.parentSchema?.['x-not-message'] === 'string') message = error.parentSchema['x-not-message'] as string;
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

/**
 * Routes whose answers have their own shape, keyed by path: everything under `/scim/v2` speaks
 * SCIM (RFC 7644): `application/scim+json`, and every error — the router's 400/401/404/405, the
 * body parser's 400/413/415, 5xx — as a SCIM error body. The router and `send` both pass every
 * result through here, so no handler or middleware special-cases SCIM.
 */
export const SCIM_BASE_PATH = '/scim/v2';

export function isScimPath(path: string): boolean {
  return path === SCIM_BASE_PATH || path.startsWith(`${SCIM_BASE_PATH}/`);
}

export function shapeForRoute(path: string, result: HttpResult): HttpResult {
  if (!isScimPath(path)) return result;
  const headers: Record<string, string> = { ...result.headers, 'Content-Type': 'application/scim+json' };
  if (result.status < 400 || isScimErrorBody(result.body)) return { ...result, headers };
  if (result.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="scim"';
  const body = (result.body ?? {}) as { error?: string; message?: string; details?: ErrorDetail[] };
  const where = (body.details ?? []).map((d) => `${d.path.join('.')}: ${d.message}`).join('; ');
  const detail = [body.message ?? 'The request failed.', where].filter(Boolean).join(' ');
  // A request the schema refuses is malformed (invalidSyntax) when the body is at fault, else a bad value.
  const scimType = result.status !== 400 ? undefined : (body.details ?? []).some((d) => d.path[0] === 'body') ? 'invalidSyntax' : 'invalidValue';
  return { status: result.status, headers, body: scimErrorBody(result.status, detail, scimType) };
}
