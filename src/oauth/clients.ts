import { randomBytes } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';
import type { Db } from '../db/schema';
import { safeEqual, sha256Hex } from '../lib/crypto';
import { permissionsOfRole, sortedPermissions } from '../access/role-permissions';
import { serviceAccountAsClient, verifyServiceAccountSecret, type ServiceAccountAsClient } from '../service-accounts/service';
import { organizationUnlocked } from '../principal/organization-lock';
import { findRegisteredClient } from './registered-clients';

/**
 * The clients the authorization server knows (docs/oauth.md#clients), looked up by client_id on
 * every request that names one, never cached beyond it (a disabled service account or a deleted
 * client is refused on its next request):
 * - a service account (`svc_`): a confidential client of the `client_credentials` grant, its
 *   secrets the account's (src/service-accounts), its scopes its role's permissions now;
 * - an organization client (`oac_`, /v1/oauth-clients): public or confidential, its scopes and
 *   redirect URIs as registered;
 * - a worker (`wrk_`, docs/workers-and-usage.md#workers-as-oauth-clients): confidential, its secret
 *   its host token, its scopes its ceiling ∩ its creator's permissions now; unknown while stopped
 *   or while its creator is removed or suspended;
 * - a dynamically registered client (`oac_` too, of no organization, ./registered-clients.ts):
 *   public, as it registered. (Metadata-document clients are the library's, ./outside-clients.ts.)
 *
 * Secrets are stored hashed, so the library cannot compare them: a client's metadata carries a
 * random per-process placeholder the library never sees presented, and `verifyClientSecret`
 * (installed as the library's compareClientSecret, ./provider.ts) checks the real one against the
 * hashes the client's lookup read in the same statement (a confidential client's token request is
 * one statement whatever its kind: test/api/token-round-trips.test.ts).
 */
export type ClientKind = 'service_account' | 'organization' | 'worker' | 'dynamic' | 'metadata_document';

/** RFC 8693's grant type: workers may use it (./token-exchange.ts). */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** Metadata fields of ours on a client (oidc-provider's `extraClientMetadata`). */
export const EXTRA_CLIENT_METADATA = ['client_kind', 'organization_id', 'member_id'] as const;

const PLACEHOLDER_SECRET = randomBytes(32).toString('base64url');

export interface OAuthClientMetadata extends AdapterPayload {
  client_kind: ClientKind;
  organization_id: string;
  /** The member a service account's tokens act as; absent for organization clients. */
  member_id?: string;
}

/**
 * A client's secret check as its lookup read it (a service account's live secrets' hashes, a
 * worker's host token hash, a confidential organization client's secret hash), for the request
 * that looked it up: keyed by the library's context of that request (oidc-provider's `Provider.ctx`,
 * passed in by ./provider.ts), taken by that request's secret check, and gone with the request. A
 * check with nothing read in its request asks the database.
 */
type SecretCheck = (presented: string, now: Date) => Promise<boolean>;
const secretChecks = new WeakMap<object, { clientId: string; verify: SecretCheck }>();

/** A check of the presented secret against the SHA-256 hash the lookup read, in constant time. */
const hashCheck = (storedHash: string): SecretCheck => async (presented) => safeEqual(sha256Hex(presented), storedHash);
const accountCheck = (verify: ServiceAccountAsClient['verifySecret']): SecretCheck => async (presented, now) => (await verify(presented, now)) !== null;

/** `request`: the library's context of the request looking the client up, when there is one. */
export async function findClient(db: Db, clientId: string, now: Date, request?: object): Promise<AdapterPayload | undefined> {
  if (clientId.startsWith('svc_')) return serviceAccountClient(db, clientId, now, request);
  if (clientId.startsWith('oac_')) return (await organizationClient(db, clientId, request)) ?? registeredClient(db, clientId, now);
  if (clientId.startsWith('wrk_')) return workerClient(db, clientId, request);
  return undefined;
}

async function registeredClient(db: Db, clientId: string, now: Date): Promise<AdapterPayload | undefined> {
  const metadata = await findRegisteredClient(db, clientId, now);
  if (!metadata) return undefined;
  return { ...metadata, client_id: clientId, client_kind: 'dynamic', token_endpoint_auth_method: 'none' };
}

async function serviceAccountClient(db: Db, clientId: string, now: Date, request: object | undefined): Promise<OAuthClientMetadata | undefined> {
  const account = await serviceAccountAsClient(db, clientId, now);
  if (!account) return undefined;
  if (request) secretChecks.set(request, { clientId, verify: accountCheck(account.verifySecret) });
  const scopes = sortedPermissions(permissionsOfRole({ key: account.role, builtIn: account.roleBuiltIn ?? false, permissions: account.rolePermissions }));
  return {
    client_id: clientId,
    client_secret: PLACEHOLDER_SECRET,
    client_kind: 'service_account',
    organization_id: account.organizationId,
    member_id: account.memberId,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: scopes.join(' '),
  };
}

async function workerClient(db: Db, clientId: string, request: object | undefined): Promise<OAuthClientMetadata | undefined> {
  const row = await db
    .selectFrom('workers as w')
    .innerJoin('members as m', 'm.id', 'w.created_by_member_id')
    .leftJoin('organization_roles as r', (join) => join.onRef('r.organization_id', '=', 'm.organization_id').onRef('r.key', '=', 'm.role'))
    .select(['w.organization_id', 'w.ceiling', 'w.host_token_hash', 'm.role', 'r.built_in', 'r.permissions'])
    .where('w.id', '=', clientId)
    .where('w.stopped_at', 'is', null)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .where(organizationUnlocked('w.organization_id'))
    .executeTakeFirst();
  if (!row) return undefined;
  // The host token is the client secret (rotating it rotates the secret).
  if (request) secretChecks.set(request, { clientId, verify: hashCheck(row.host_token_hash) });
  const creator = permissionsOfRole({ key: row.role, builtIn: row.built_in ?? false, permissions: row.permissions });
  return {
    client_id: clientId,
    client_secret: PLACEHOLDER_SECRET,
    client_kind: 'worker',
    organization_id: row.organization_id,
    grant_types: ['client_credentials', TOKEN_EXCHANGE],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: sortedPermissions(row.ceiling.filter((key) => creator.has(key))).join(' '),
  };
}

async function organizationClient(db: Db, clientId: string, request: object | undefined): Promise<OAuthClientMetadata | undefined> {
  const row = await db
    .selectFrom('oauth_clients')
    .select(['organization_id', 'name', 'type', 'redirect_uris', 'scopes', 'logo_url', 'secret_hash'])
    .where('id', '=', clientId)
    // A client of an organization scheduled for deletion is unknown: no code, token or refresh (docs/organization-deletion.md#deletion).
    .where(organizationUnlocked('oauth_clients.organization_id'))
    .executeTakeFirst();
  if (!row) return undefined;
  const confidential = row.type === 'confidential';
  if (confidential && request && row.secret_hash) secretChecks.set(request, { clientId, verify: hashCheck(row.secret_hash) });
  return {
    client_id: clientId,
    ...(confidential ? { client_secret: PLACEHOLDER_SECRET } : {}),
    client_kind: 'organization',
    organization_id: row.organization_id,
    client_name: row.name,
    ...(row.logo_url ? { logo_uri: row.logo_url } : {}),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: row.redirect_uris,
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
    scope: row.scopes.join(' '),
  };
}

/** The presented secret is one of this client's: a live secret of the service account, or the organization client's. */
export async function verifyClientSecret(db: Db, client: { clientId: string; kind: ClientKind | undefined }, presented: string, now: Date, request?: object): Promise<boolean> {
  if (typeof presented !== 'string' || presented.length === 0 || presented.length > 512) return false;
  const read = request ? secretChecks.get(request) : undefined;
  if (request && read) secretChecks.delete(request);
  if (read?.clientId === client.clientId && (client.kind === 'service_account' || client.kind === 'worker' || client.kind === 'organization')) return read.verify(presented, now);
  if (client.kind === 'service_account') return (await verifyServiceAccountSecret(db, client.clientId, presented, now)) !== null;
  if (client.kind === 'worker') {
    // The host token is the client secret (rotating it rotates the secret); found by its hash, as x-worker-token is.
    const row = await db.selectFrom('workers').select('id').where('id', '=', client.clientId).where('host_token_hash', '=', sha256Hex(presented)).executeTakeFirst();
    return row !== undefined;
  }
  if (client.kind === 'organization') {
    const row = await db.selectFrom('oauth_clients').select('id').where('id', '=', client.clientId).where('secret_hash', '=', sha256Hex(presented)).where(organizationUnlocked('oauth_clients.organization_id')).executeTakeFirst();
    return row !== undefined;
  }
  return false;
}
