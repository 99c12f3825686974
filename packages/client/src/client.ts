// createApiClient: openapi-fetch over the contract's types, with a credential, typed errors
// (ApiError, see errors.ts) and retries (retry.ts). Calls look like openapi-fetch's:
//   const { data, error } = await api.POST('/v1/teams', { body: { name: 'Platform' } });
import createClient, { type MaybeOptionalInit, type ParseAsResponse } from 'openapi-fetch';
import type { HttpMethod, PathsWithMethod, Readable, RequiredKeysOf, ResponseObjectMap, SuccessResponse } from 'openapi-typescript-helpers';
import { ApiError, type ApiErrorOf } from './errors';
import type { paths } from './generated/api';
import { retryingFetch, type RetryOptions } from './retry';

/** How calls authenticate: a session token (sign-in, sign-up, bootstrap) or an organization API key. */
export type Credential = { sessionToken: string } | { apiKey: string };

export interface ClientOptions {
  /** The service's origin, e.g. "https://cp.example.com" (paths start with /v1). */
  baseUrl: string;
  credential?: Credential;
  /** Retries of 429/503 (idempotent methods, or calls made with `retry: true`). */
  retry?: RetryOptions;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** Another fetch (tests, proxies); defaults to the global one. */
  fetch?: (request: Request) => Promise<Response>;
}

/** Options of one call, next to openapi-fetch's (params, body, headers, signal...). */
export interface CallOptions {
  /** true: retry 429/503 even for a non-idempotent method; false: never retry this call. */
  retry?: boolean;
}

/** The 2xx body of an operation, as openapi-fetch parses it. */
export type SuccessData<P extends keyof paths, M extends HttpMethod, Init = unknown> = ParseAsResponse<
  Readable<SuccessResponse<ResponseObjectMap<OperationOf<P, M>>, 'application/json'>>,
  Init
>;

/** What a call answers: `data` (the 2xx body) or `error` (an ApiError typed for the operation). */
export type Answer<P extends keyof paths, M extends HttpMethod, Init> =
  | { data: SuccessData<P, M, Init>; error?: never; response: Response }
  | { data?: never; error: ApiErrorOf<P, M>; response: Response };

/** The `data` of an answer type (never for its error member). */
export type DataOf<R> = R extends { error: ApiError } ? never : R extends { data: infer D } ? D : never;

type OperationOf<P extends keyof paths, M extends HttpMethod> = paths[P][M] extends Record<string | number, any> ? paths[P][M] : never;

// openapi-fetch's rule: the second argument is required only when the operation needs params or a body.
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & CallOptions)?] : [Init & CallOptions];

export type Method<M extends HttpMethod> = <P extends PathsWithMethod<paths, M>, Init extends MaybeOptionalInit<paths[P], M>>(
  url: P,
  ...init: InitParam<Init>
) => Promise<Answer<P, M, Init>>;

export interface ApiClient {
  GET: Method<'get'>;
  POST: Method<'post'>;
  PUT: Method<'put'>;
  PATCH: Method<'patch'>;
  DELETE: Method<'delete'>;
  /** The same client with another credential (or none). */
  withCredential(credential: Credential | undefined): ApiClient;
  readonly options: Readonly<ClientOptions>;
}

function credentialHeaders(credential: Credential | undefined): Record<string, string> {
  if (credential === undefined) return {};
  return 'sessionToken' in credential ? { authorization: `Bearer ${credential.sessionToken}` } : { 'x-api-key': credential.apiKey };
}

type LooseInit = Record<string, unknown> & CallOptions;
type LooseAnswer = { data?: unknown; error?: unknown; response: Response };
type LooseRequest = (method: string, url: string, init: Record<string, unknown>) => Promise<LooseAnswer>;

export function createApiClient(options: ClientOptions): ApiClient {
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const retry = options.retry ?? {};
  const raw = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, ...credentialHeaders(options.credential) },
  });
  // openapi-fetch's `request` is typed per path and method; this module passes both through from
  // the typed methods below, so it calls it in the loose form (the one place types are set aside).
  const request = raw.request as unknown as LooseRequest;

  const call =
    (method: Uppercase<HttpMethod>) =>
    async (url: string, init?: LooseInit): Promise<LooseAnswer> => {
      const { retry: retryThis, ...rest } = init ?? {};
      const fetch = retryThis === false ? baseFetch : retryingFetch(baseFetch, retry, retryThis === true);
      const answer = await request(method, url, { ...rest, fetch });
      if (answer.response.ok) return { data: answer.data, response: answer.response };
      return { error: new ApiError(method, url, answer.response, answer.error), response: answer.response };
    };

  // The loose functions above have the typed signatures (ApiClient); TypeScript cannot see that
  // a pass-through keeps a generic's types, hence the one conversion.
  return {
    GET: call('GET') as Method<'get'>,
    POST: call('POST') as Method<'post'>,
    PUT: call('PUT') as Method<'put'>,
    PATCH: call('PATCH') as Method<'patch'>,
    DELETE: call('DELETE') as Method<'delete'>,
    withCredential: (credential) => {
      const { credential: _previous, ...rest } = options;
      return createApiClient(credential === undefined ? rest : { ...rest, credential });
    },
    options,
  };
}

/** The data of an answer, or its error thrown (for code that does not handle errors where they happen). */
export async function unwrap<R extends { data?: unknown; error?: ApiError | undefined }>(answer: Promise<R>): Promise<DataOf<R>> {
  const result = await answer;
  if (result.error !== undefined) throw result.error;
  // No error: the success member (TypeScript does not narrow a union on a generic property).
  return result.data as DataOf<R>;
}
