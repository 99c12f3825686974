import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/schema';
import type { SsoConnectionsTable } from '../tables';

/** What a sign-in needs of a connection (the OIDC secret stays sealed until it is used). */
export type SignInConnection = Omit<Selectable<SsoConnectionsTable>, 'name' | 'created_by_member_id' | 'created_at' | 'updated_at'>;

const CONNECTION_COLUMNS = [
  'c.id',
  'c.organization_id',
  'c.type',
  'c.oidc_issuer',
  'c.oidc_client_id',
  'c.oidc_client_secret_sealed',
  'c.oidc_scopes',
  'c.saml_idp_entity_id',
  'c.saml_idp_sso_url',
  'c.saml_idp_certificate',
  'c.default_role',
  'c.role_mappings',
  'c.enabled',
] as const;

/** Any connection by id (public routes: the id alone names the organization). */
export async function findConnection(db: Db, connectionId: string): Promise<SignInConnection | undefined> {
  return db.selectFrom('sso_connections as c').select(CONNECTION_COLUMNS).where('c.id', '=', connectionId).executeTakeFirst();
}

/** The oldest enabled connection of the organization that verified `domain` (lower case). */
export async function findConnectionForDomain(db: Db, domain: string): Promise<SignInConnection | undefined> {
  return db
    .selectFrom('sso_domains as d')
    .innerJoin('sso_connections as c', 'c.organization_id', 'd.organization_id')
    .select(CONNECTION_COLUMNS)
    .where('d.domain', '=', domain)
    .where('d.status', '=', 'verified')
    .where('c.enabled', '=', true)
    .orderBy('c.created_at')
    .orderBy('c.id')
    .limit(1)
    .executeTakeFirst();
}

/** Whether the organization verified the domain (lower case). */
export async function domainVerifiedBy(db: Db, organizationId: string, domain: string): Promise<boolean> {
  const row = await db
    .selectFrom('sso_domains')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('domain', '=', domain)
    .where('status', '=', 'verified')
    .executeTakeFirst();
  return row !== undefined;
}

export interface LoginStateRow {
  state_hash: string;
  connection_id: string;
  organization_id: string;
  code_verifier_sealed: string | null;
  nonce: string | null;
  saml_request_id: string | null;
  return_to: string | null;
  verifier_hash: string | null;
}

const STATE_COLUMNS = ['state_hash', 'connection_id', 'organization_id', 'code_verifier_sealed', 'nonce', 'saml_request_id', 'return_to', 'verifier_hash'] as const;

export async function insertLoginState(
  db: Db,
  state: {
    hash: string;
    connectionId: string;
    organizationId: string;
    codeVerifierSealed: string | null;
    nonce: string | null;
    samlRequestId: string | null;
    returnTo: string | null;
    verifierHash: string;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await db
    .insertInto('sso_login_states')
    .values({
      state_hash: state.hash,
      connection_id: state.connectionId,
      organization_id: state.organizationId,
      code_verifier_sealed: state.codeVerifierSealed,
      nonce: state.nonce,
      saml_request_id: state.samlRequestId,
      return_to: state.returnTo,
      verifier_hash: state.verifierHash,
      created_at: state.now,
      expires_at: state.expiresAt,
      consumed_at: null,
    })
    .execute();
}

/** A live (unused, unexpired) login state, by its hash or, for SAML, by the request id a response answers. */
export async function findLoginState(db: Db, by: { hash: string } | { samlRequestId: string }, now: Date): Promise<LoginStateRow | undefined> {
  let query = db.selectFrom('sso_login_states').select(STATE_COLUMNS).where('consumed_at', 'is', null).where('expires_at', '>', now);
  query = 'hash' in by ? query.where('state_hash', '=', by.hash) : query.where('saml_request_id', '=', by.samlRequestId);
  return query.executeTakeFirst();
}

/**
 * Marks a live login state used, once: of two callbacks racing with one state, the second waits
 * for the first's transaction and then finds nothing.
 */
export async function consumeLoginState(db: Db, stateHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('sso_login_states')
    .set({ consumed_at: now })
    .where('state_hash', '=', stateHash)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('state_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/** Expired states are useless; each start removes a few so the table stays small without a job. */
export async function deleteExpiredLoginStates(db: Db, now: Date): Promise<void> {
  await db
    .deleteFrom('sso_login_states')
    .where('state_hash', 'in', (eb) => eb.selectFrom('sso_login_states').select('state_hash').where('expires_at', '<', now).limit(100))
    .execute();
}

export interface IdentityRow {
  user_id: string;
  email: string | null;
}

/** Serializes sign-ins of one (connection, subject) until the transaction ends. */
export async function lockSubject(db: Db, connectionId: string, subject: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`sso:${connectionId}:${subject}`}))`.execute(db);
}

/**
 * Serialises first sign-ins that arrive with one e-mail under different subjects (two connections,
 * or a provider that re-issued a subject): the second waits, then finds the account and the member
 * the first created instead of inserting them again.
 */
export async function lockEmail(db: Db, emailNormalized: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`sso-email:${emailNormalized}`}))`.execute(db);
}

/** The identity of (connection, subject), locked until the sign-in transaction ends. */
export async function lockIdentity(db: Db, connectionId: string, subject: string): Promise<IdentityRow | undefined> {
  return db
    .selectFrom('sso_identities')
    .select(['user_id', 'email'])
    .where('connection_id', '=', connectionId)
    .where('subject', '=', subject)
    .forUpdate()
    .executeTakeFirst();
}

export async function insertIdentity(
  db: Db,
  identity: { connectionId: string; subject: string; organizationId: string; userId: string; email: string | null; now: Date },
): Promise<void> {
  await db
    .insertInto('sso_identities')
    .values({
      connection_id: identity.connectionId,
      subject: identity.subject,
      organization_id: identity.organizationId,
      user_id: identity.userId,
      email: identity.email,
      created_at: identity.now,
      last_sign_in_at: identity.now,
    })
    .execute();
}

export async function touchIdentity(db: Db, connectionId: string, subject: string, email: string | null, now: Date): Promise<void> {
  await db
    .updateTable('sso_identities')
    .set({ email, last_sign_in_at: now })
    .where('connection_id', '=', connectionId)
    .where('subject', '=', subject)
    .execute();
}


export interface MembershipRow {
  id: string;
  role: string;
  suspended_at: Date | null;
}

/** The user's active (not removed) membership in the organization, locked for the sign-in. */
export async function lockMembership(db: Db, organizationId: string, userId: string): Promise<MembershipRow | undefined> {
  return db
    .selectFrom('members')
    .select(['id', sql<string>`role`.as('role'), 'suspended_at'])
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}


/** Which of `keys` are roles of the organization (a mapped role may have been deleted since). */
export async function existingRoleKeys(db: Db, organizationId: string, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.selectFrom('organization_roles').select('key').where('organization_id', '=', organizationId).where('key', 'in', keys).execute();
  return new Set(rows.map((r) => r.key));
}

export interface ExchangeCodeRow {
  user_id: string;
  organization_id: string;
  connection_id: string | null;
}

export async function insertExchangeCode(
  db: Db,
  code: { hash: string; userId: string; organizationId: string; connectionId: string; verifierHash: string | null; now: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('sso_exchange_codes')
    .values({
      code_hash: code.hash,
      user_id: code.userId,
      organization_id: code.organizationId,
      connection_id: code.connectionId,
      session_id: null,
      session_token_sealed: null,
      verifier_hash: code.verifierHash,
      created_at: code.now,
      expires_at: code.expiresAt,
      consumed_at: null,
    })
    .execute();
}

/**
 * Marks a live code used, once, when the verifier of its sign-in's start comes with it; a second
 * exchange, an expired code or a code without its verifier finds nothing (and is not spent).
 */
export async function consumeExchangeCode(db: Db, hash: string, verifierHash: string, now: Date): Promise<ExchangeCodeRow | undefined> {
  return db
    .updateTable('sso_exchange_codes')
    .set({ consumed_at: now })
    .where('code_hash', '=', hash)
    .where('verifier_hash', '=', verifierHash)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['user_id', 'organization_id', 'connection_id'])
    .executeTakeFirst();
}

/** Records an accepted SAML assertion id; false when it was accepted before (a replay). */
export async function recordSamlAssertion(db: Db, assertion: { connectionId: string; assertionId: string; now: Date; expiresAt: Date }): Promise<boolean> {
  const row = await db
    .insertInto('sso_saml_assertions')
    .values({ connection_id: assertion.connectionId, assertion_id: assertion.assertionId, created_at: assertion.now, expires_at: assertion.expiresAt })
    .onConflict((oc) => oc.columns(['connection_id', 'assertion_id']).doNothing())
    .returning('assertion_id')
    .executeTakeFirst();
  return row !== undefined;
}
