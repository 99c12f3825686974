import type { Document } from 'openapi-backend';
import { Unauthorized } from '../lib/errors';
import type { AnyPrincipal } from '../domain/principal';
import { authorize, membershipOf, principalOf, requirePlatformAdmin, requireSession, userIdOf } from '../access/roles';
import { PERMISSION_CATALOGUE, isPermission, type Permission } from '../access/permissions';

/**
 * Who may call each operation, read from the contract once at start and enforced by the router
 * before the handler runs. Every secured operation declares exactly one of:
 *
 * - `x-permission: <key>`: a member of the caller's active organization holding the key
 *   (src/access/permissions.ts). No membership is 404 `organization_not_found`; a missing key is
 *   403 with the key's `reason`.
 * - `x-access: member`: any member of the active organization; what more it needs depends on data
 *   (a role on the resource, being its creator, the caller's own record), which its service checks
 *   and `x-permission-also` / `x-resource-role` describe.
 * - `x-access: account`: the caller's own account (a user's session or API key); no organization. A
 *   service account has no account: 401.
 * - `x-platform-admin: true`: a platform administrator (a user flag, not an organization permission).
 * - `x-access: worker` / `x-access: scim`: the operation's security is only the worker token / only
 *   a SCIM token, whose principal is its worker / its organization's directory. A worker's route
 *   may list `oauthAccessToken` beside `workerToken`: a worker acting for a member with a delegated
 *   token (docs/workers-and-usage.md#the-credential-broker), which its service checks.
 *
 * Public operations declare `security: []` (or an empty requirement `{}` among others: the
 * credential is optional) and nothing else. Session-only operations are the ones whose security
 * lists `bearerAuth` alone: the router also requires the principal to be a session.
 *
 * A secured operation without a declaration, with two, or naming an unknown permission stops the
 * start with its operationId.
 */
export type AccessCheck = (principal: AnyPrincipal | null) => void;

const ACCESS_KINDS = ['member', 'account', 'worker', 'scim'] as const;
type AccessKind = (typeof ACCESS_KINDS)[number];

/** The security scheme an `x-access` of a non-user principal must be alone in. */
const SCHEME_OF: Partial<Record<AccessKind, string>> = { worker: 'workerToken', scim: 'scimBearer' };
const SESSION_SCHEME = 'bearerAuth';
const DELEGATED_SCHEME = 'oauthAccessToken';

interface OperationObject {
  operationId?: string;
  security?: Record<string, unknown>[];
  'x-permission'?: unknown;
  'x-permission-also'?: unknown;
  'x-access'?: unknown;
  'x-platform-admin'?: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const DECLARATIONS = ['x-permission', 'x-access', 'x-platform-admin'] as const;

/** operationId → its check (null: a public operation, nothing to check). Throws on the first operation that is not declared well. */
export function accessChecks(doc: Document): Map<string, AccessCheck | null> {
  const checks = new Map<string, AccessCheck | null>();
  for (const item of Object.values(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = (item as Record<string, unknown> | undefined)?.[method] as OperationObject | undefined;
      if (!op?.operationId) continue;
      checks.set(op.operationId, checkOf(op.operationId, op, op.security ?? (doc.security as Record<string, unknown>[] | undefined) ?? []));
    }
  }
  return checks;
}

function checkOf(operationId: string, op: OperationObject, security: Record<string, unknown>[]): AccessCheck | null {
  const refuse = (problem: string) => new Error(`${operationId}: ${problem} (openapi/paths/*.yaml; the vocabulary is in src/server/access.ts)`);
  const declared = DECLARATIONS.filter((key) => op[key] !== undefined);
  const also = op['x-permission-also'];
  if (also !== undefined && (!Array.isArray(also) || !also.every((key) => typeof key === 'string' && isPermission(key)))) {
    throw refuse(`x-permission-also ${JSON.stringify(also)} names a permission missing from src/access/permissions.ts`);
  }
  if (security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0)) {
    if (declared.length > 0) throw refuse(`is public (its security allows no credential) but declares ${declared.join(', ')}`);
    return null;
  }
  if (declared.length === 0) throw refuse('declares no access: add x-permission: <key>, x-access: member|account|worker|scim, or x-platform-admin: true');
  if (declared.length > 1) throw refuse(`declares its access twice (${declared.join(', ')}): keep one`);

  const schemes = new Set(security.flatMap((requirement) => Object.keys(requirement)));
  const permission = op['x-permission'];
  const access = op['x-access'];
  if (permission !== undefined && (typeof permission !== 'string' || !isPermission(permission))) {
    throw refuse(`x-permission ${JSON.stringify(permission)} is not in src/access/permissions.ts`);
  }
  if (op['x-platform-admin'] !== undefined && op['x-platform-admin'] !== true) throw refuse('x-platform-admin must be true');
  if (access !== undefined && !ACCESS_KINDS.includes(access as AccessKind)) throw refuse(`x-access ${JSON.stringify(access)} is not one of ${ACCESS_KINDS.join(', ')}`);

  const kind: AccessKind | 'permission' | 'platformAdmin' = permission !== undefined ? 'permission' : access !== undefined ? (access as AccessKind) : 'platformAdmin';
  const ownScheme = SCHEME_OF[kind as AccessKind];
  if (ownScheme) {
    // A worker's route may also take a delegated access token (the worker acting for a member;
    // its service answers any other token 403 delegation_required).
    const delegated = kind === 'worker' && schemes.size === 2 && schemes.has(DELEGATED_SCHEME);
    if (!schemes.has(ownScheme) || (schemes.size !== 1 && !delegated)) throw refuse(`x-access: ${kind} needs security to be ${ownScheme} alone${kind === 'worker' ? ` or with ${DELEGATED_SCHEME}` : ''}`);
    return kind === 'worker' ? (delegated ? workerOrTokenCheck : workerCheck) : scimCheck;
  }
  for (const scheme of Object.values(SCHEME_OF)) {
    if (schemes.has(scheme!)) throw refuse(`security ${scheme} answers no user: declare x-access: ${scheme === 'workerToken' ? 'worker' : 'scim'}`);
  }
  const sessionOnly = schemes.size === 1 && schemes.has(SESSION_SCHEME);
  const key = permission as Permission | undefined;
  return (principal) => {
    const ctx = { principal };
    const user = principalOf(ctx);
    if (sessionOnly) requireSession(user);
    if (kind === 'platformAdmin') requirePlatformAdmin(user);
    else if (key) authorize(membershipOf(ctx), key);
    else if (kind === 'member') membershipOf(ctx);
    else if (kind === 'account') userIdOf(user);
  };
}

/**
 * The answers an operation's check can give besides 401 (scripts/error-contract.ts adds them to
 * what the operation can answer, so its error responses list them).
 */
export function accessAnswers(op: OperationObject): [status: number, code: string][] {
  const answers: [number, string][] = [];
  const permission = op['x-permission'];
  if (typeof permission === 'string' && isPermission(permission)) answers.push([403, PERMISSION_CATALOGUE[permission].reason]);
  if (permission !== undefined || op['x-access'] === 'member') answers.push([404, 'organization_not_found']);
  if (op['x-platform-admin'] === true) answers.push([403, 'platform_admin_required']);
  return answers;
}

function workerCheck(principal: AnyPrincipal | null): void {
  if (principal?.kind !== 'worker' && principal?.kind !== 'workerClaim') throw new Unauthorized();
}

function workerOrTokenCheck(principal: AnyPrincipal | null): void {
  if (principal?.kind !== 'accessToken') workerCheck(principal);
}

function scimCheck(principal: AnyPrincipal | null): void {
  if (principal?.kind !== 'scim') throw new Unauthorized();
}
