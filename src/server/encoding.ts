import type { ErrorDetail } from '../lib/errors';

/**
 * A malformed percent-encoding (`/v1/teams/%E0%A4%A`, `?cursor=%ZZ`) is the client's mistake: 400
 * `invalid_request` naming the parameter, instead of the URIError that openapi-backend's path
 * matching throws (a 500) or a raw, undecoded value reaching the validator.
 */
function decodes(raw: string): boolean {
  try {
    decodeURIComponent(raw);
    return true;
  } catch {
    return false;
  }
}

/** `template` is the matched operation's path (`/v1/teams/{teamId}`). */
export function malformedEncoding(path: string, template: string, originalUrl: string): ErrorDetail | null {
  // Only a `%` can start a malformed escape: a URL without one (most requests) has nothing to check.
  if (!originalUrl.includes('%') && !path.includes('%')) return null;
  const segments = path.split('/');
  const names = template.split('/');
  for (let i = 0; i < segments.length; i++) {
    if (decodes(segments[i]!)) continue;
    const param = /^\{(.+)\}$/.exec(names[i] ?? '')?.[1];
    return { path: param ? ['path', param] : ['path'], message: 'is not valid percent-encoding' };
  }
  const queryAt = originalUrl.indexOf('?');
  if (queryAt < 0) return null;
  for (const pair of originalUrl.slice(queryAt + 1).split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' ');
    const value = eq < 0 ? '' : pair.slice(eq + 1).replace(/\+/g, ' ');
    if (decodes(key) && decodes(value)) continue;
    return { path: ['query', decodes(key) ? decodeURIComponent(key) : key], message: 'is not valid percent-encoding' };
  }
  return null;
}
