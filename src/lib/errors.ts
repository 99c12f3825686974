/**
 * The few error classes services throw. Each carries its HTTP status and the spec's body; one
 * middleware (src/http/errors.ts) turns them into responses, so no handler builds an error body.
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
 * 401 E-unauth. The body is exactly `{error: 'unauthorized'}` (interface-spec §7); the message
 * stays on the error for logs and is never sent.
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
  constructor(readonly code: string, message: string) {
    super(message);
  }
  body() {
    return { error: this.code, message: this.message };
  }
}

/**
 * 403. `variant: 'reason-only'` gives the `{reason, message}` body that the interface
 * specification fixes for update and delete marketplace.
 */
export class Forbidden extends AppError {
  readonly status = 403;
  constructor(readonly reason: string, message: string, readonly variant: 'standard' | 'reason-only' = 'standard') {
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
export class CodedError extends AppError {
  constructor(readonly status: number, readonly code: string, message: string, private readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
  body() {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

export class NotFound extends CodedError {
  constructor(code: string, message: string) {
    super(404, code, message);
  }
}

export class Conflict extends CodedError {
  constructor(code: string, message: string) {
    super(409, code, message);
  }
}

/** 502: an upstream (suite chat, worker runtime, OAuth server) failed. */
export class Upstream extends CodedError {
  constructor(code: string, message: string) {
    super(502, code, message);
  }
}

/** 503: the database (or another dependency we cannot work without) is unreachable. */
export class Unavailable extends CodedError {
  constructor(message = 'The service is temporarily unavailable; retry shortly.') {
    super(503, 'service_unavailable', message);
  }
}

export class RateLimited extends CodedError {
  constructor(readonly retryAfterSeconds: number, message = 'Too many requests; retry later.') {
    super(429, 'rate_limited', message);
  }
  override headers() {
    return { 'Retry-After': String(Math.max(1, Math.ceil(this.retryAfterSeconds))) };
  }
}

export class NotImplemented extends CodedError {
  constructor(operationId: string) {
    super(501, 'not_implemented', `${operationId} is declared in the contract but not built yet.`);
  }
}
