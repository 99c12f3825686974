export { createApiClient, unwrap, type Answer, type DataOf, type SuccessData, type ApiClient, type CallOptions, type ClientOptions, type Credential, type Method } from './client';
export { ApiError, assertNever, type ApiErrorOf, type ErrorVariant, type InvalidDetail, type UndocumentedAnswer } from './errors';
export { paginate, type PageItem, type PagedPath } from './paginate';
export { IDEMPOTENT_METHODS, retryAfterMs, type RetryOptions } from './retry';
export { contractVersion } from './generated/errors';
export type { components, operations, paths } from './generated/api';

import type { components } from './generated/api';
/** A schema of the contract by name: `Schema<'Team'>`. */
export type Schema<N extends keyof components['schemas']> = components['schemas'][N];
