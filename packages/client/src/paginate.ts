// paginate: every item of a keyset-paged list ({items, nextCursor}), page after page, following
// `nextCursor` until it is null.
import type { MaybeOptionalInit } from 'openapi-fetch';
import type { PathsWithMethod } from 'openapi-typescript-helpers';
import type { ApiClient, CallOptions } from './client';
import type { paths } from './generated/api';

type PageOf<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer B } } } } } ? B : never;

/** The GET paths whose 200 answer is a page: `{ items: T[]; nextCursor: string | null }`. */
export type PagedPath = {
  [P in PathsWithMethod<paths, 'get'>]: PageOf<P> extends { items: readonly unknown[]; nextCursor: string | null } ? P : never;
}[PathsWithMethod<paths, 'get'>];

/** The item type of a paged path. */
export type PageItem<P extends PagedPath> = PageOf<P> extends { items: readonly (infer T)[] } ? T : never;

type LooseGet = (url: string, init?: Record<string, unknown>) => Promise<{ data?: unknown; error?: unknown }>;

function isPage(value: unknown): value is { items: unknown[]; nextCursor: unknown } {
  return typeof value === 'object' && value !== null && 'items' in value && Array.isArray(value.items) && 'nextCursor' in value;
}

/**
 * Iterates every item of a list: `for await (const grant of paginate(api, '/v1/plugins/{pluginId}/access', { params }))`.
 * `params.query.limit` sets the page size; an error answer is thrown as its ApiError.
 */
export async function* paginate<P extends PagedPath>(
  client: ApiClient,
  path: P,
  init?: MaybeOptionalInit<paths[P], 'get'> & CallOptions,
): AsyncGenerator<PageItem<P>, void, undefined> {
  // The typed GET is called with the same path and params it was given; only `cursor` changes.
  const get = client.GET as unknown as LooseGet;
  const params: Record<string, unknown> = { ...(init?.params ?? {}) };
  const query: Record<string, unknown> = { ...((params.query as Record<string, unknown> | undefined) ?? {}) };
  for (let guard = 0; ; guard++) {
    const answer = await get(path, { ...init, params: { ...params, query } });
    if (answer.error !== undefined) throw answer.error;
    if (!isPage(answer.data)) throw new Error(`GET ${path} did not answer a page`);
    for (const item of answer.data.items) yield item as PageItem<P>;
    const next = answer.data.nextCursor;
    if (typeof next !== 'string' || next === '') return;
    if (next === query.cursor || guard > 100_000) throw new Error(`GET ${path} answered the same cursor again`);
    query.cursor = next;
  }
}
