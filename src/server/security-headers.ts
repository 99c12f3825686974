import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

/**
 * helmet's response headers, worked out once. With static options (ours: CSP off) helmet sets the
 * same headers on every response, through a dozen nested middleware calls per request; here they
 * are read off one dry run at start and set in one call. Pinned by
 * test/seams/security-headers.test.ts: the headers equal what helmet itself sets on a response.
 */
export function securityHeaders(options: Parameters<typeof helmet>[0]) {
  const headers = helmetHeaders(options);
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeaders(headers);
    next();
  };
}

/** What helmet sets (and removes) on one response, with these options. */
export function helmetHeaders(options: Parameters<typeof helmet>[0]): Map<string, string> {
  const headers = new Map<string, string>();
  const res = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
  };
  let synchronous = false;
  helmet(options)({} as never, res as never, (err?: unknown) => {
    if (err) throw err;
    synchronous = true;
  });
  // A future helmet that answers asynchronously or varies per request would break the dry run.
  if (!synchronous) throw new Error('helmet did not finish synchronously: set its headers per request instead');
  return headers;
}
