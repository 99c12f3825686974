import type { ColumnType } from 'kysely';
import type { Timestamp } from '../db/columns';

/** Tables of single sign-on (migration 20261124_0100_sso). */

export interface RoleMapping {
  group: string;
  role: string;
}

export interface SsoConnectionsTable {
  id: string;
  organization_id: string;
  type: 'oidc' | 'saml';
  name: string;
  /** OIDC columns: null on a SAML connection. The client secret is SecretBox ciphertext. */
  oidc_issuer: string | null;
  oidc_client_id: string | null;
  oidc_client_secret_sealed: string | null;
  oidc_scopes: string[] | null;
  /** SAML columns: null on an OIDC connection. The certificate is PEM. */
  saml_idp_entity_id: string | null;
  saml_idp_sso_url: string | null;
  saml_idp_certificate: string | null;
  default_role: string;
  role_mappings: ColumnType<RoleMapping[], string, string>;
  enabled: boolean;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SsoDomainsTable {
  id: string;
  organization_id: string;
  /** Lower case, no trailing dot. */
  domain: string;
  status: 'pending' | 'verified';
  /** The TXT value expected at `_cp-challenge.<domain>`. */
  challenge_value: string;
  created_at: Timestamp;
  verified_at: Timestamp | null;
}

export interface SsoIdentitiesTable {
  connection_id: string;
  subject: string;
  organization_id: string;
  user_id: string;
  email: string | null;
  created_at: Timestamp;
  last_sign_in_at: Timestamp;
}

export interface SsoLoginStatesTable {
  state_hash: string;
  connection_id: string;
  organization_id: string;
  code_verifier_sealed: string | null;
  nonce: string | null;
  saml_request_id: string | null;
  return_to: string | null;
  /** SHA-256 of the `verifier` answered by the start; an exchange of this sign-in's code presents it. */
  verifier_hash: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  consumed_at: Timestamp | null;
}

export interface SsoExchangeCodesTable {
  code_hash: string;
  user_id: string;
  organization_id: string;
  connection_id: string | null;
  session_id: string | null;
  session_token_sealed: string | null;
  /** The login state's verifier hash: the exchange must present the verifier. */
  verifier_hash: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  consumed_at: Timestamp | null;
}

export interface SsoSamlAssertionsTable {
  connection_id: string;
  assertion_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface SsoTables {
  sso_connections: SsoConnectionsTable;
  sso_domains: SsoDomainsTable;
  sso_identities: SsoIdentitiesTable;
  sso_login_states: SsoLoginStatesTable;
  sso_exchange_codes: SsoExchangeCodesTable;
  sso_saml_assertions: SsoSamlAssertionsTable;
}
