import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { requireFeature } from '../plans';
import { changed, created, deleted, recordChange } from '../audit';
import * as store from './connection-store';
import type { ConnectionRow, ConnectionValues } from './connection-store';
import { checkIssuer, checkRoles, checkSsoUrl, holdNamedRoles, normalizeCertificate, normalizeScopes, refuseOtherTypeFields, requireFields } from './connection-input';
import { ssoUrls } from './urls';

type Schemas = components['schemas'];

export const connectionNotFound = () => new NotFound('sso_connection_not_found', 'The SSO connection could not be found.');

export function toConnection(publicBaseUrl: string, row: ConnectionRow): Schemas['SsoConnection'] {
  const urls = ssoUrls(publicBaseUrl, row.id);
  const common = {
    id: row.id,
    type: row.type,
    name: row.name,
    defaultRole: row.default_role,
    roleMappings: row.role_mappings,
    enabled: row.enabled,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
  if (row.type === 'oidc') {
    return { ...common, issuer: row.oidc_issuer!, clientId: row.oidc_client_id!, scopes: row.oidc_scopes ?? [], redirectUri: urls.oidcRedirectUri };
  }
  return {
    ...common,
    idpEntityId: row.saml_idp_entity_id!,
    idpSsoUrl: row.saml_idp_sso_url!,
    idpCertificate: row.saml_idp_certificate!,
    spEntityId: urls.samlEntityId,
    acsUrl: urls.samlAcsUrl,
    metadataUrl: urls.samlEntityId,
  };
}

/** What an audit entry shows of a connection: its configuration, never the client secret. */
function audited(row: ConnectionRow) {
  return {
    type: row.type,
    name: row.name,
    issuer: row.oidc_issuer ?? undefined,
    clientId: row.oidc_client_id ?? undefined,
    scopes: row.oidc_scopes ?? undefined,
    idpEntityId: row.saml_idp_entity_id ?? undefined,
    idpSsoUrl: row.saml_idp_sso_url ?? undefined,
    defaultRole: row.default_role,
    roleMappings: row.role_mappings,
    enabled: row.enabled,
  };
}

/**
 * Every connection and domain write, after the router's `sso.manage` and session (security
 * bearerAuth alone: an API key is 401): authenticated recently (these writes decide who can sign
 * in to the organization), and the plan feature `sso`.
 */
export async function guardSsoWrite(deps: AppDeps, principal: Principal, membership: Membership): Promise<void> {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'sso');
}

export async function createConnection(deps: AppDeps, principal: Principal, membership: Membership, body: Schemas['CreateSsoConnectionRequest']) {
  await guardSsoWrite(deps, principal, membership);
  refuseOtherTypeFields(body.type, body);
  requireFields(body.type, body);
  const oidc = body.type === 'oidc';
  const values: ConnectionValues = {
    name: body.name,
    oidc_issuer: oidc ? checkIssuer(deps, body.issuer!) : null,
    oidc_client_id: oidc ? body.clientId! : null,
    oidc_client_secret_sealed: oidc ? deps.secrets.encrypt(body.clientSecret!) : null,
    oidc_scopes: oidc ? normalizeScopes(body.scopes) : null,
    saml_idp_entity_id: oidc ? null : body.idpEntityId!,
    saml_idp_sso_url: oidc ? null : checkSsoUrl(body.idpSsoUrl!),
    saml_idp_certificate: oidc ? null : normalizeCertificate(body.idpCertificate!),
    default_role: 'member',
    role_mappings: [],
    enabled: body.enabled ?? true,
  };
  const id = newId('ssoConnection');
  const row = await deps.db.transaction().execute(async (trx) => {
    await holdNamedRoles(trx, membership.organizationId, body);
    Object.assign(values, await checkRoles(trx, membership, body));
    await store.insertConnection(trx, { ...values, id, organizationId: membership.organizationId, type: body.type, memberId: membership.memberId, now: deps.clock.now() });
    const inserted = (await store.findConnection(trx, membership.organizationId, id))!;
    await recordChange(trx, deps.audit, { action: 'sso_connection.created', target: { type: 'sso_connection', id }, changes: created(audited(inserted)) });
    return inserted;
  });
  return toConnection(deps.settings.publicBaseUrl, row);
}

export async function listConnections(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'sso-connections',
    page,
    (after, take) => store.listConnections(deps.db, membership.organizationId, after, take),
    (row) => toConnection(deps.settings.publicBaseUrl, row),
  );
}

export async function getConnection(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findConnection(deps.db, membership.organizationId, id);
  if (!row) throw connectionNotFound();
  return toConnection(deps.settings.publicBaseUrl, row);
}

export async function updateConnection(deps: AppDeps, principal: Principal, membership: Membership, id: string, body: Schemas['UpdateSsoConnectionRequest']) {
  await guardSsoWrite(deps, principal, membership);
  const row = await deps.db.transaction().execute(async (trx) => {
    await holdNamedRoles(trx, membership.organizationId, body);
    // Another organization's connection is 404 before anything about the body is judged.
    const current = await store.lockConnection(trx, membership.organizationId, id);
    if (!current) throw connectionNotFound();
    // The egress check names `issuer` whatever else the body holds.
    if (body.issuer !== undefined) checkIssuer(deps, body.issuer);
    refuseOtherTypeFields(current.type, body);
    const patch: Partial<ConnectionValues> = {};
    if (body.name !== undefined) patch.name = body.name;
    if (body.enabled !== undefined) patch.enabled = body.enabled;
    if (body.issuer !== undefined) patch.oidc_issuer = checkIssuer(deps, body.issuer);
    if (body.clientId !== undefined) patch.oidc_client_id = body.clientId;
    if (body.clientSecret !== undefined) patch.oidc_client_secret_sealed = deps.secrets.encrypt(body.clientSecret);
    if (body.scopes !== undefined) patch.oidc_scopes = normalizeScopes(body.scopes);
    if (body.idpEntityId !== undefined) patch.saml_idp_entity_id = body.idpEntityId;
    if (body.idpSsoUrl !== undefined) patch.saml_idp_sso_url = checkSsoUrl(body.idpSsoUrl);
    if (body.idpCertificate !== undefined) patch.saml_idp_certificate = normalizeCertificate(body.idpCertificate);
    Object.assign(patch, await checkRoles(trx, membership, body));
    await store.updateConnection(trx, membership.organizationId, id, patch, deps.clock.now());
    const updated = (await store.findConnection(trx, membership.organizationId, id))!;
    const changes = changed(audited(current), audited(updated));
    // The secret itself never reaches the log; that it was replaced does.
    if (body.clientSecret !== undefined) changes.clientSecretReplaced = { from: null, to: true };
    await recordChange(trx, deps.audit, { action: 'sso_connection.updated', target: { type: 'sso_connection', id }, changes });
    return updated;
  });
  return toConnection(deps.settings.publicBaseUrl, row);
}

export async function deleteConnection(deps: AppDeps, principal: Principal, membership: Membership, id: string): Promise<void> {
  await guardSsoWrite(deps, principal, membership);
  await deps.db.transaction().execute(async (trx) => {
    const current = await store.lockConnection(trx, membership.organizationId, id);
    if (!current) throw connectionNotFound();
    await store.deleteConnection(trx, membership.organizationId, id);
    await recordChange(trx, deps.audit, { action: 'sso_connection.deleted', target: { type: 'sso_connection', id }, changes: deleted({ type: current.type, name: current.name }) });
  });
}
