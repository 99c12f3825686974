import { X509Certificate } from 'node:crypto';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { Db } from '../db/schema';
import { Invalid } from '../lib/errors';
import { checkTenantUrl } from '../outbound';
import { assignableRole, holdRoles } from '../roles/service';
import type { ConnectionValues } from './connection-store';

type Schemas = components['schemas'];
type Body = Schemas['CreateSsoConnectionRequest'] | Schemas['UpdateSsoConnectionRequest'];

export const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];
const OIDC_FIELDS = ['issuer', 'clientId', 'clientSecret', 'scopes'] as const;
const SAML_FIELDS = ['idpEntityId', 'idpSsoUrl', 'idpCertificate'] as const;

/** A field of the other protocol is refused by name, so a typo in `type` cannot pass silently. */
export function refuseOtherTypeFields(type: 'oidc' | 'saml', body: Body): void {
  const foreign = type === 'oidc' ? SAML_FIELDS : OIDC_FIELDS;
  for (const field of foreign) {
    if ((body as Record<string, unknown>)[field] !== undefined) throw Invalid.at(['body', field], `is not a field of a ${type} connection`);
  }
}

export function requireFields(type: 'oidc' | 'saml', body: Body): void {
  const needed = type === 'oidc' ? (['issuer', 'clientId', 'clientSecret'] as const) : SAML_FIELDS;
  for (const field of needed) {
    if ((body as Record<string, unknown>)[field] === undefined) throw Invalid.at(['body', field], `is required for a ${type} connection`);
  }
}

/** The issuer is called (discovery, JWKS, token): https only unless listed in OUTBOUND_ALLOWED_NETWORKS. */
export function checkIssuer(deps: AppDeps, issuer: string): string {
  checkTenantUrl(deps.outbound.policy, issuer, ['body', 'issuer'], { httpsOnly: true });
  return issuer;
}

/** The browser, not the service, goes to the IdP's SSO URL: an absolute http(s) URL without credentials. */
export function checkSsoUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw Invalid.at(['body', 'idpSsoUrl'], 'must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw Invalid.at(['body', 'idpSsoUrl'], 'must be an http or https URL');
  if (url.username || url.password) throw Invalid.at(['body', 'idpSsoUrl'], 'must not contain credentials');
  return value;
}

/** PEM (or the base64 body alone) of one X.509 certificate, stored as PEM. */
export function normalizeCertificate(value: string): string {
  const body = value
    .replace(/-----BEGIN CERTIFICATE-----/g, '')
    .replace(/-----END CERTIFICATE-----/g, '')
    .replace(/\s+/g, '');
  const bad = () => Invalid.at(['body', 'idpCertificate'], 'must be one X.509 certificate (PEM)');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw bad();
  const pem = `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
  try {
    new X509Certificate(pem);
  } catch {
    throw bad();
  }
  return pem;
}

export function normalizeScopes(scopes: string[] | undefined): string[] {
  const list = scopes ?? DEFAULT_OIDC_SCOPES;
  return list.includes('openid') ? list : ['openid', ...list];
}

/**
 * First thing in a connection write's transaction: locks the roles the body names until it ends,
 * so DELETE /v1/roles either waits and then counts this connection as a holder, or deletes first
 * and `checkRoles` finds no such role. Taken before the connection row, in the order DELETE
 * /v1/roles takes them (role, then connections), so the two cannot deadlock.
 */
export async function holdNamedRoles(db: Db, organizationId: string, body: Body): Promise<void> {
  await holdRoles(db, organizationId, [...(body.defaultRole !== undefined ? [body.defaultRole] : []), ...(body.roleMappings ?? []).map((m) => m.role)]);
}

/**
 * Role keys a connection gives (defaultRole, roleMappings[].role): roles of the organization,
 * never `owner`, and only roles whose permissions the caller holds (no escalation).
 */
export async function checkRoles(db: Db, membership: Membership, body: Body): Promise<Pick<ConnectionValues, 'default_role' | 'role_mappings'> | Partial<ConnectionValues>> {
  const out: Partial<ConnectionValues> = {};
  if (body.defaultRole !== undefined) out.default_role = await assignableRole(db, membership, body.defaultRole, ['body', 'defaultRole']);
  if (body.roleMappings !== undefined) {
    out.role_mappings = [];
    for (const [index, mapping] of body.roleMappings.entries()) {
      const role = await assignableRole(db, membership, mapping.role, ['body', 'roleMappings', String(index), 'role']);
      out.role_mappings.push({ group: mapping.group, role });
    }
  }
  return out;
}
