import type { Dialect } from '../contract/fronts';
import type { ErrorDetail } from '../lib/errors';
import { SCIM_BASE_PATH } from './base-path';
import { isScimErrorBody, scimErrorBody } from './errors';
import { scimRouteSpellings } from './route-spellings';

/**
 * SCIM 2.0 (RFC 7644) as a dialect of the contract: everything under `/scim/v2` is an operation of
 * openapi/paths/scim.yaml, answered as `application/scim+json`, and every error — the router's
 * 400/401/404/405, the body layer's 400/413/415, 5xx — as a SCIM error body (docs/scim.md). The
 * server passes every answer under the base path through `shape`, so no handler or middleware
 * special-cases SCIM.
 */
export const scimDialect: Dialect = {
  name: 'scim',
  basePath: SCIM_BASE_PATH,
  before: scimRouteSpellings,
  // Okta's spec test creates Users without a Content-Type; RFC 7644 §3.8 names JSON the only body format.
  untypedBodyIsJson: true,
  shape(result) {
    const headers: Record<string, string> = { ...result.headers, 'Content-Type': 'application/scim+json' };
    if (result.status < 400 || isScimErrorBody(result.body)) return { ...result, headers };
    if (result.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="scim"';
    const body = (result.body ?? {}) as { error?: string; message?: string; details?: ErrorDetail[] };
    const where = (body.details ?? []).map((d) => `${d.path.join('.')}: ${d.message}`).join('; ');
    const detail = [body.message ?? 'The request failed.', where].filter(Boolean).join(' ');
    // A request the schema refuses is malformed (invalidSyntax) when the body is at fault, else a bad value.
    const scimType = result.status !== 400 ? undefined : (body.details ?? []).some((d) => d.path[0] === 'body') ? 'invalidSyntax' : 'invalidValue';
    return { status: result.status, headers, body: scimErrorBody(result.status, detail, scimType) };
  },
};
