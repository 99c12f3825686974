import type { Generated } from 'kysely';
import type { Timestamp } from '../db/columns';

/** Tables of src/mfa (the only area that writes them). */
export interface UserTotpTable {
  user_id: string;
  /** The base32 secret, sealed with SECRET_KEY (src/lib/crypto.ts SecretBox). */
  secret_sealed: string;
  /** Null until the user proved a code from it (`POST /v1/me/mfa/totp/confirm`). */
  confirmed_at: Timestamp | null;
  /** The RFC 6238 time step of the last accepted code: a code of that step or earlier is refused. */
  last_used_step: string | null;
  created_at: Timestamp;
}

export interface UserRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

export interface PasskeysTable {
  id: string;
  user_id: string;
  name: string;
  /** base64url credential id, as the authenticator gave it. */
  credential_id: string;
  /** base64url COSE public key. */
  public_key: string;
  counter: string;
  transports: Generated<string[]>;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
}

export interface WebauthnRegistrationsTable {
  user_id: string;
  challenge: string;
  expires_at: Timestamp;
}

export interface MfaChallengesTable {
  id: string;
  user_id: string;
  token_hash: string;
  purpose: 'sign_in' | 'reauthenticate';
  /** The session being reauthenticated (purpose `reauthenticate`). */
  session_id: string | null;
  webauthn_challenge: string | null;
  failures: Generated<number>;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Timestamp | null;
}

export interface OrganizationAuthPoliciesTable {
  organization_id: string;
  require_mfa: boolean;
  updated_at: Timestamp;
}

export interface MfaTables {
  user_totp: UserTotpTable;
  user_recovery_codes: UserRecoveryCodesTable;
  passkeys: PasskeysTable;
  webauthn_registrations: WebauthnRegistrationsTable;
  mfa_challenges: MfaChallengesTable;
  organization_auth_policies: OrganizationAuthPoliciesTable;
}
