/**
 * Every error code the service answers, with its status and what it means: the one list. Error
 * classes (./errors.ts) take a code of this list whose status matches theirs, so a new code does
 * not compile until it is written here. The contract lists, per operation and status, the codes
 * that operation can answer (`error`, or `reason` for 403); test/contract/error-codes.test.ts
 * checks those lists against what the code can throw, both ways (`npm run spec:errors` prints
 * the differences and writes the lists).
 *
 * For 403 the code is the body's `reason` (`error` is always `forbidden`).
 */
export const ERROR_CODES = {
  // Any operation (answered before the handler runs, or by the process)
  invalid_request: { status: 400, description: 'The request failed validation; `details[].path` names each field and `message` says what is allowed.' },
  unauthorized: { status: 401, description: 'No valid credentials were sent (the body is exactly `{"error":"unauthorized"}`).' },
  not_found: { status: 404, description: 'No operation has this path.' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method.' },
  payload_too_large: { status: 413, description: 'The body is larger than the service accepts.' },
  unsupported_media_type: { status: 415, description: 'The body is not `application/json`.' },
  rate_limited: { status: 429, description: 'Too many attempts; retry after the seconds in `Retry-After`.' },
  internal_error: { status: 500, description: 'An unexpected failure; nothing about it is disclosed.' },
  response_validation_failed: { status: 500, description: 'Development and test only: the service produced an answer its contract does not declare.' },
  not_implemented: { status: 501, description: 'Declared in the contract, not built yet.' },
  service_unavailable: { status: 503, description: 'The database does not answer; retry after the seconds in `Retry-After`.' },

  invalid_token: { status: 400, description: 'The link or challenge is invalid, already used or expired: ask for a new link, or sign in again for a new challenge.' },
  oauth_error: { status: 400, description: 'The authorization server ended the sign-in with an error; the message names its code.' },

  invalid_credentials: { status: 401, description: 'The e-mail and password (or the second factor) do not match an account.' },

  plan_limit_reached: { status: 402, description: "The organization is at its plan's limit for what the request would create (`limit` names it)." },
  enterprise_plan_required: { status: 402, description: "The feature (`feature` names it) is not part of the organization's plan." },

  org_admin_required: { status: 403, description: 'The caller needs an admin permission of the organization for this.' },
  org_member_required: { status: 403, description: 'The caller needs a member permission of the organization for this.' },
  permission_required: { status: 403, description: "The caller's role lacks the permission the message names." },
  permission_not_held: { status: 403, description: 'A role or key cannot be given permissions its giver does not hold.' },
  member_permissions_not_held: { status: 403, description: 'The member holds permissions the caller lacks: only someone holding them may change their role, remove or suspend them.' },
  owner_required: { status: 403, description: 'Only the owner of the organization may do this.' },
  platform_admin_required: { status: 403, description: 'Only a platform admin may do this.' },
  fresh_session_required: { status: 403, description: 'Reauthenticate (POST /v1/auth/reauthenticate) and retry.' },
  email_not_verified: { status: 403, description: 'Confirm the e-mail address first (the link in the message sent to it).' },
  mfa_enrollment_required: { status: 403, description: 'The organization requires a second factor: enrol one first.' },
  organization_deleted: { status: 403, description: 'The organization is scheduled for deletion: only its owner may export its data or restore it.' },
  sso_required: { status: 403, description: 'The organization requires single sign-on for this e-mail address.' },
  email_domain_not_verified: { status: 403, description: "The identity provider's e-mail is not in a domain the organization verified." },
  email_managed_by_identity_provider: { status: 403, description: "The organization's identity provider manages this address: change it there." },
  email_mismatch: { status: 403, description: 'The invitation was sent to a different e-mail address.' },
  member_suspended: { status: 403, description: 'The member is suspended in the organization.' },
  delegation_required: { status: 403, description: 'Only an agent acting for a member (an access token a worker exchanged for the member, with `act`) may do this; sessions, API keys and other tokens may not.' },
  worker_creator_or_admin_required: { status: 403, description: "Only the worker's creator or an admin may do this." },
  marketplace_viewer_required: { status: 403, description: 'The caller needs the viewer role on the marketplace.' },
  marketplace_editor_required: { status: 403, description: 'The caller needs the editor role on the marketplace.' },
  marketplace_manager_required: { status: 403, description: 'The caller needs the manager role on the marketplace.' },
  plugin_viewer_required: { status: 403, description: 'The caller needs the viewer role on the plugin.' },
  plugin_editor_required: { status: 403, description: 'The caller needs the editor role on the plugin.' },
  plugin_manager_required: { status: 403, description: 'The caller needs the manager role on the plugin.' },
  connector_instance_viewer_required: { status: 403, description: 'The caller needs the viewer role on the connector instance.' },
  connector_instance_editor_required: { status: 403, description: 'The caller needs the editor role on the connector instance.' },
  connector_instance_manager_required: { status: 403, description: 'The caller needs the manager role on the connector instance.' },
  llm_provider_viewer_required: { status: 403, description: 'The caller needs the viewer role on the LLM provider.' },
  llm_provider_editor_required: { status: 403, description: 'The caller needs the editor role on the LLM provider.' },
  llm_provider_manager_required: { status: 403, description: 'The caller needs the manager role on the LLM provider.' },

  organization_not_found: { status: 404, description: 'The caller has no active organization, or the organization is gone.' },
  api_key_not_found: { status: 404, description: 'No API key with this id in the organization.' },
  connection_not_found: { status: 404, description: 'No MCP connection with this id in the organization.' },
  connector_instance_not_found: { status: 404, description: 'No connector instance with this id in the organization.' },
  delivery_not_found: { status: 404, description: 'No webhook delivery with this id for this endpoint.' },
  grant_not_found: { status: 404, description: 'No grant with this id on this resource.' },
  invitation_not_found: { status: 404, description: 'No invitation with this id (or link) in the organization.' },
  llm_provider_not_found: { status: 404, description: 'No LLM provider with this id in the organization.' },
  marketplace_not_found: { status: 404, description: 'No marketplace with this id visible to the caller.' },
  member_not_found: { status: 404, description: 'No member with this id in the organization.' },
  oauth_authorization_not_found: { status: 404, description: 'No live authorization with this id (of the caller, or in the organization for admins).' },
  oauth_client_not_found: { status: 404, description: 'No OAuth client with this id in the organization.' },
  passkey_not_found: { status: 404, description: 'No passkey with this id on the account.' },
  plugin_not_found: { status: 404, description: 'No plugin with this id visible to the caller.' },
  role_not_found: { status: 404, description: 'No role with this key in the organization.' },
  scim_token_not_found: { status: 404, description: 'No SCIM token with this id in the organization.' },
  service_account_not_found: { status: 404, description: 'No service account with this id in the organization.' },
  service_account_secret_not_found: { status: 404, description: 'No secret with this id on the service account.' },
  session_not_found: { status: 404, description: 'The caller has no live session with this id.' },
  sso_connection_not_found: { status: 404, description: 'No SSO connection with this id in the organization.' },
  sso_domain_not_found: { status: 404, description: 'No SSO domain with this id in the organization.' },
  sso_not_configured: { status: 404, description: 'No SSO connection answers for this organization or e-mail domain.' },
  team_not_found: { status: 404, description: 'No team with this id in the organization.' },
  template_not_found: { status: 404, description: 'No template with this id in the organization.' },
  webhook_not_found: { status: 404, description: 'No webhook endpoint with this id in the organization.' },
  audit_stream_not_found: { status: 404, description: 'No audit stream with this id in the organization.' },
  worker_not_found: { status: 404, description: 'No worker with this id in the organization.' },
  export_not_found: { status: 404, description: 'No export with this id in the organization.' },
  mfa_not_enrolled: { status: [404, 409], description: 'The account has no second factor of the kind the request needs.' },

  already_bootstrapped: { status: 409, description: 'The first user and organization exist already.' },
  already_verified: { status: 409, description: 'The e-mail address is verified already.' },
  already_member: { status: 409, description: 'The person is already a member of the organization.' },
  organization_deletion_scheduled: { status: 409, description: 'The organization is already scheduled for deletion.' },
  organization_not_deleted: { status: 409, description: 'The organization is not scheduled for deletion: there is nothing to restore.' },
  organization_purging: { status: 409, description: 'The grace period is over: the organization is being purged and cannot be restored.' },
  export_in_progress: { status: 409, description: 'An export of the organization is pending or running already: one at a time.' },
  export_not_ready: { status: 409, description: 'The export is not ready (pending, running or failed): there is nothing to download yet.' },
  export_expired: { status: 409, description: 'The export expired and its file was removed: request a new one.' },
  already_owner: { status: 409, description: 'The member is already the owner.' },
  builtin_role_immutable: { status: 409, description: 'Built-in roles cannot be changed or deleted.' },
  domain_exists: { status: 409, description: 'The organization has this domain already.' },
  domain_taken: { status: 409, description: 'Another organization verified this domain.' },
  domain_verification_failed: { status: 409, description: "The domain's DNS TXT record was not found." },
  email_taken: { status: 409, description: 'An account with this e-mail address exists.' },
  invitation_not_pending: { status: 409, description: 'The invitation was accepted or cancelled already.' },
  invitation_pending: { status: 409, description: 'A pending invitation for this e-mail address exists.' },
  managed_marketplace_cannot_be_deleted: { status: 409, description: 'The built-in marketplace cannot be deleted.' },
  mfa_already_enrolled: { status: 409, description: 'The account has this second factor already.' },
  mfa_method_unavailable: { status: 409, description: 'The account has no second factor of this kind: answer with another.' },
  mfa_not_pending: { status: 409, description: 'No sign-in or enrolment waits for a second factor.' },
  needs_connection: { status: 409, description: 'Connect an account first.' },
  owner_must_transfer: { status: 409, description: 'The account owns an organization: transfer its ownership before deleting the account.' },
  owner_cannot_be_removed: { status: 409, description: 'The owner cannot be removed; transfer ownership first.' },
  owner_role_immutable: { status: 409, description: "The owner's role changes only by transferring ownership." },
  passkey_exists: { status: 409, description: 'This passkey is registered already.' },
  passkey_options_required: { status: 409, description: 'Ask for passkey options first; they are good for five minutes and one response.' },
  role_in_use: { status: 409, description: 'Members, invitations or SSO connections hold the role: give `reassignTo`.' },
  role_key_taken: { status: 409, description: 'The organization has a role with this key.' },
  secret_limit_reached: { status: 409, description: 'The service account has 5 unexpired secrets: delete one before adding another.' },
  service_account_cannot_own: { status: 409, description: 'A service account cannot own the organization: ownership moves only to a person.' },
  team_in_use: { status: 409, description: 'Something still refers to the team.' },
  team_name_taken: { status: 409, description: 'The organization has a team with this name.' },
  webhook_disabled: { status: 409, description: 'The webhook endpoint is disabled; enable it first.' },
  worker_runtime_unavailable: { status: 409, description: 'The worker has no runtime URL.' },
  worker_stopped: { status: 409, description: 'The worker is stopped; start it to reach its runtime.' },

  invitation_expired: { status: 410, description: 'The invitation has expired.' },
  version_mismatch: { status: 412, description: 'The resource changed since it was read (`version` is the current one): reload and retry.' },

  llm_provider_error: { status: 502, description: 'The LLM provider failed or refused the request.' },
  mcp_oauth_error: { status: 502, description: "The MCP server's authorization server failed or refused." },
  sso_provider_error: { status: 502, description: 'The identity provider failed or refused.' },
  suite_api_error: { status: 502, description: "The office suite's API failed or refused." },
  worker_runtime_error: { status: 502, description: "The worker's runtime failed or refused." },
} as const satisfies Record<string, { status: number | readonly number[]; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

type StatusOf<C extends ErrorCode> = (typeof ERROR_CODES)[C]['status'] extends infer S ? (S extends readonly number[] ? S[number] : S) : never;

/** The codes answered with status `S` (a class for 404 takes only 404 codes). */
export type CodeWithStatus<S extends number> = { [C in ErrorCode]: S extends StatusOf<C> ? C : never }[ErrorCode];

export function statusesOf(code: ErrorCode): number[] {
  const status: number | readonly number[] = ERROR_CODES[code].status;
  return typeof status === 'number' ? [status] : [...status];
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}
