// Typed errors: every answer outside 2xx becomes an ApiError. For one operation its type is the
// union of the answers the contract documents for it (status, `error`, `reason`, body), plus one
// `documented: false` member for anything else (`default` answers: 413, 5xx, a proxy's page), so a
// client can `switch (err.error)` over the documented codes and the compiler checks it covers all.
import type { paths } from './generated/api';
import { errorAnswers } from './generated/errors';

type Table = typeof errorAnswers;

/** The documented error variants of `method` on `path` (as generated from the contract). */
export type ErrorVariant<P, M> = P extends keyof Table
  ? M extends keyof Table[P]
    ? Table[P][M] extends readonly (infer V)[]
      ? V
      : never
    : never
  : never;

type OperationOf<P, M> = P extends keyof paths ? (M extends keyof paths[P] ? paths[P][M] : never) : never;

/** The JSON body the contract documents for `status` of an operation. */
type BodyAt<Op, S> = Op extends { responses: infer R }
  ? S extends keyof R
    ? R[S] extends { content: { 'application/json': infer B } }
      ? B
      : undefined
    : unknown
  : unknown;

type Documented<V, Op> = V extends { readonly status: infer S; readonly error: infer E; readonly reasons: readonly (infer R)[] }
  ? { readonly documented: true; readonly status: S; readonly error: E extends null ? undefined : E; readonly reason: R; readonly body: BodyAt<Op, S> }
  : V extends { readonly status: infer S; readonly error: infer E }
    ? { readonly documented: true; readonly status: S; readonly error: E extends null ? undefined : E; readonly reason: undefined; readonly body: BodyAt<Op, S> }
    : never;

/** An answer the contract does not document for this operation (by status, `error` or `reason`). */
export interface UndocumentedAnswer {
  readonly documented: false;
  readonly status: number;
  readonly error: string | undefined;
  readonly reason: string | undefined;
  readonly body: unknown;
}

/** The error of `method` on `path`: narrow with `documented`, then switch on `error` / `reason`. */
export type ApiErrorOf<P, M> = ApiError & (Documented<ErrorVariant<P, M>, OperationOf<P, M>> | UndocumentedAnswer);

/** One entry of `details` on a 400 `invalid_request`: `path` names the field (["body", "name"]). */
export interface InvalidDetail {
  readonly path: readonly string[];
  readonly message: string;
}

interface Variant {
  readonly status: number;
  readonly error: string | null;
  readonly reasons?: readonly string[];
}

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && Object.prototype.hasOwnProperty.call(body, name) ? Reflect.get(body, name) : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function detailsOf(body: unknown): InvalidDetail[] {
  const raw = field(body, 'details');
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((d: unknown) => {
    const path = field(d, 'path');
    const message = text(field(d, 'message'));
    if (!Array.isArray(path) || message === undefined) return [];
    return [{ path: path.map(String), message }];
  });
}

function variantsFor(path: string, method: string): readonly Variant[] {
  const byMethod: Readonly<Record<string, readonly Variant[]>> | undefined = Object.prototype.hasOwnProperty.call(errorAnswers, path)
    ? Reflect.get(errorAnswers, path)
    : undefined;
  if (byMethod === undefined || !Object.prototype.hasOwnProperty.call(byMethod, method)) return [];
  return byMethod[method] ?? [];
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** True when the contract documents this answer for the operation; then `error`/`reason` are typed. */
  readonly documented: boolean;
  readonly status: number;
  /** The answer's `error` code (undefined when the body has none). */
  readonly error: string | undefined;
  /** The answer's `reason` (403 answers name the rule). */
  readonly reason: string | undefined;
  /** The parsed body (JSON, or the text when it was not JSON). */
  readonly body: unknown;
  /** `details` of a 400 `invalid_request` (each names a field by `path`); empty otherwise. */
  readonly details: readonly InvalidDetail[];
  readonly method: string;
  /** The contract path (with `{placeholders}`), e.g. "/v1/teams/{teamId}". */
  readonly path: string;
  readonly response: Response;

  constructor(method: string, path: string, response: Response, body: unknown) {
    const error = text(field(body, 'error'));
    const reason = text(field(body, 'reason'));
    const message = text(field(body, 'message'));
    super(`${method.toUpperCase()} ${path}: ${response.status}${error ? ` ${error}` : ''}${reason ? ` (${reason})` : ''}${message ? `: ${message}` : ''}`);
    this.method = method.toLowerCase();
    this.path = path;
    this.response = response;
    this.status = response.status;
    this.body = body;
    this.error = error;
    this.reason = reason;
    this.details = detailsOf(body);
    this.documented = variantsFor(path, this.method).some(
      (v) =>
        v.status === response.status &&
        (v.error === null ? error === undefined : v.error === error) &&
        (v.reasons === undefined ? true : reason !== undefined && v.reasons.includes(reason)),
    );
  }

  /** The answer's `message`, when it has one. */
  get apiMessage(): string | undefined {
    return text(field(this.body, 'message'));
  }
}

/** For the `default:` branch of an exhaustive switch: fails to compile when a case is missing. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value ${JSON.stringify(value)}`);
}
