import type { HttpResult } from '../contract';
import type { Dialect } from '../contract/fronts';
import { dialects } from './registry';

/** The dialect whose base path holds this path (src/contract/fronts.ts), or undefined for `/v1` and the rest. */
export function dialectOf(path: string): Dialect | undefined {
  for (const dialect of dialects) {
    if (path === dialect.basePath || path.startsWith(`${dialect.basePath}/`)) return dialect;
  }
  return undefined;
}

/** An answer as its route's dialect writes it; the router and `send` both pass every result through here. */
export function shapeForRoute(path: string, result: HttpResult): HttpResult {
  const dialect = dialectOf(path);
  return dialect ? dialect.shape(result) : result;
}
