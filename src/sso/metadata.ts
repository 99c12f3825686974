import type { AppDeps } from '../domain/deps';
import { samlMetadataXml, samlSpFor } from './saml';
import { connectionNotFound } from './connections';

/**
 * SP metadata of a SAML connection (public: identity providers fetch it by URL). The connection
 * id is the only input; an OIDC or unknown id is 404. A disabled connection still has metadata,
 * so an administrator can register it at the IdP before turning it on.
 */
export async function samlMetadata(deps: AppDeps, connectionId: string): Promise<string> {
  const row = await deps.db.selectFrom('sso_connections').select(['id', 'type']).where('id', '=', connectionId).executeTakeFirst();
  if (!row || row.type !== 'saml') throw connectionNotFound();
  return samlMetadataXml(samlSpFor(deps.settings.publicBaseUrl, row.id));
}
