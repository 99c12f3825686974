/**
 * Every way a SAML response can be refused, as a short stable reason. Callers may log or return
 * the reason; nothing from the XML libraries (messages, stacks, received values) is carried, so a
 * client never sees library internals or echoes of what it sent.
 */
export type SamlRejectReason =
  | 'malformed_response' // not base64, not XML, too large, a DOCTYPE, not a samlp:Response
  | 'idp_error' // the identity provider answered a non-success status
  | 'invalid_signature' // no signature by the configured certificate over the assertion used
  | 'destination_mismatch' // Response Destination or SubjectConfirmationData Recipient ≠ ACS URL
  | 'in_response_to_mismatch' // not an answer to the AuthnRequest we expect
  | 'audience_mismatch'
  | 'issuer_mismatch'
  | 'expired'
  | 'not_yet_valid'
  | 'missing_subject'
  | 'invalid_idp_certificate' // the connection's certificate cannot be read
  | 'invalid_response'; // anything else the verifier refused

export class SamlRejected extends Error {
  constructor(readonly reason: SamlRejectReason) {
    super(`SAML response refused: ${reason}`);
    this.name = 'SamlRejected';
  }
}
