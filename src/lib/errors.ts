import type { CodeWithStatus, ErrorCode } from './error-codes';

/**
 * The error classes: every error answer of the service is one of these. Each carries its HTTP
 * status and the spec's body; one mapper (src/server/errors.ts) turns them into responses, so no
 * handler, router hook or middleware builds an error body. Codes come from ./error-codes.ts.
 */
export interface ErrorDetail {
  message: string;
  path: string[];
}

export abstract class AppError extends Error {
  abstract readonly status: number;
  abstract body(): Record<string, unknown>;
  headers(): Record<string, string> {
    return {};
  }
}

/** 400 `invalid_request` with the location of each problem, e.g. path ['body', 'name']. */
export class Invalid extends AppError {
  readonly status = 400;
  constructor(readonly details: ErrorDetail[], message = 'The request is invalid.') {
    super(message);
  }
  static at(path: string[], message: string): Invalid {
    return new Invalid([{ message, path }], message);
  }
  body() {
    return { error: 'invalid_request', message: this.message, details: this.details };
  }
}

/**
 * 401 without credentials. The body is exactly `{error: 'unauthorized'}`; the message stays on the
 * error for logs and is never sent.
 */
export class Unauthorized extends AppError {
  readonly status = 401;
  constructor(message = 'Authentication is required.') {
    super(message);
  }
  body() {
    return { error: 'unauthorized' };
  }
}

/** 401 with a specific code (e.g. `invalid_credentials`). */
export class Unauthenticated extends AppError {
  readonly status = 401;
  constructor(readonly code: CodeWithStatus<401>, message: string) {
    super(message);
  }
  body() {
    return { error: this.code, message: this.message };
  }
}

/**
 * 403; the code is the body's `reason`. `variant: 'reason-only'` gives the `{reason, message}`
 * body update and delete marketplace answer.
 */
export class Forbidden extends AppError {
  readonly status = 403;
  constructor(readonly reason: CodeWithStatus<403>, message: string, readonly variant: 'standard' | 'reason-only' = 'standard') {
    super(message);
  }
  withVariant(variant: 'standard' | 'reason-only'): Forbidden {
    return new Forbidden(this.reason, this.message, variant);
  }
  body() {
    return this.variant === 'reason-only'
      ? { reason: this.reason, message: this.message }
      : { error: 'forbidden', reason: this.reason, message: this.message };
  }
}

/** A status with a `{error: code, message}` body: 404 not found, 409 conflict, 410 gone, ... */
export class CodedError<S extends number = number> extends AppError {
  constructor(readonly status: S, readonly code: CodeWithStatus<S>, message: string, private readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
  body() {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

export class NotFound extends CodedError<404> {
  constructor(code: CodeWithStatus<404>, message: string) {
    super(404, code, message);
  }
}

export class Conflict extends CodedError<409> {
  constructor(code: CodeWithStatus<409>, message: string) {
    super(409, code, message);
  }
}

/** 502: an upstream (suite chat, worker runtime, OAuth server) failed. */
export class Upstream extends CodedError<502> {
  constructor(code: CodeWithStatus<502>, message: string) {
    super(502, code, message);
  }
}

/** 503: the database (or another dependency we cannot work without) is unreachable. */
export class Unavailable extends CodedError<503> {
  constructor(message = 'The service is temporarily unavailable; retry shortly.') {
    super(503, 'service_unavailable', message);
  }
  override headers() {
    return { 'Retry-After': '5' };
  }
}

export class RateLimited extends CodedError<429> {
  constructor(readonly retryAfterSeconds: number, message = 'Too many requests; retry later.') {
    super(429, 'rate_limited', message);
  }
  override headers() {
    return { 'Retry-After': String(Math.max(1, Math.ceil(this.retryAfterSeconds))) };
  }
}

export class NotImplemented extends CodedError<501> {
  constructor(operationId: string) {
    super(501, 'not_implemented', `${operationId} is declared in the contract but not built yet.`);
  }
}

/** 404 for a path no operation has (the router's answer before any operation runs). */
export class RouteNotFound extends CodedError<404> {
  constructor(method: string, path: string) {
    super(404, 'not_found', `No route for ${method.toUpperCase()} ${path}.`);
  }
}

export class MethodNotAllowed extends CodedError<405> {
  constructor(method: string, path: string) {
    super(405, 'method_not_allowed', `${method.toUpperCase()} is not allowed on ${path}.`);
  }
}

export class PayloadTooLarge extends CodedError<413> {
  constructor(message: string) {
    super(413, 'payload_too_large', message);
  }
}

export class UnsupportedMediaType extends CodedError<415> {
  constructor(message = 'Send the body as application/json.') {
    super(415, 'unsupported_media_type', message);
  }
}

/** 500 with nothing about the cause (the mapper logs it). */
export class InternalError extends CodedError<500> {
  constructor() {
    super(500, 'internal_error', 'An unexpected error occurred.');
  }
}

/** Development and test only: the answer does not match the contract (src/server/router.ts). */
export class ResponseValidationFailed extends CodedError<500> {
  constructor(message: string) {
    super(500, 'response_validation_failed', message);
  }
}

export type { ErrorCode };
