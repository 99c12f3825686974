import type { NextFunction, Request, Response } from 'express';
import { MethodNotAllowed } from '../lib/errors';
import { SCIM_BASE_PATH } from './base-path';

/**
 * Identity providers spell SCIM routes their own way: Microsoft's validator sends
 * `/Users/?filter=…` (a trailing slash before the query), others `/users` or `/groups`. RFC 7644
 * §3.2 names the endpoints `/Users`, `/Groups`, `/ServiceProviderConfig`, `/ResourceTypes` and
 * `/Schemas`; every spelling that differs only in the endpoint's case or in trailing slashes is
 * rewritten here to the documented one, before routing, so each reaches the same operation (and
 * the contract keeps one path per operation). Ids and other segments are left as sent.
 */
const ENDPOINTS = new Map(['Users', 'Groups', 'ServiceProviderConfig', 'ResourceTypes', 'Schemas'].map((name) => [name.toLowerCase(), name]));
const PREFIX = `${SCIM_BASE_PATH}/`;
/** Discovery endpoints are read-only (RFC 7644 §4): any other method is 405 before a body is read. */
const READ_ONLY = new Set(['ServiceProviderConfig', 'ResourceTypes', 'Schemas']);

/** The documented spelling of a path under /scim/v2, or the path itself when it needs none. */
export function canonicalScimPath(path: string): string {
  if (!path.startsWith(PREFIX)) return path;
  const rest = path.slice(PREFIX.length).replace(/\/+$/, '');
  const slash = rest.indexOf('/');
  const endpoint = slash === -1 ? rest : rest.slice(0, slash);
  const canonical = ENDPOINTS.get(endpoint.toLowerCase()) ?? endpoint;
  return `${PREFIX}${canonical}${slash === -1 ? '' : rest.slice(slash)}`;
}

export function scimRouteSpellings(req: Request, _res: Response, next: NextFunction): void {
  if (req.url.startsWith(PREFIX)) {
    const at = req.url.indexOf('?');
    const path = at === -1 ? req.url : req.url.slice(0, at);
    const canonical = canonicalScimPath(path);
    if (canonical !== path) req.url = at === -1 ? canonical : `${canonical}${req.url.slice(at)}`;
    const endpoint = canonical.slice(PREFIX.length).split('/')[0]!;
    if (READ_ONLY.has(endpoint) && req.method !== 'GET' && req.method !== 'HEAD') {
      // Answered by the server's error layer, shaped as SCIM like every answer under the base path.
      next(new MethodNotAllowed(req.method, canonical));
      return;
    }
  }
  next();
}
