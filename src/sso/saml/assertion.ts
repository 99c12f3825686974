import { childrenNamed, parseXml, SAML_NS } from './document';
import { SamlRejected, type SamlRejectReason } from './rejected';

/**
 * Checks and reads the assertion AFTER its signature was verified: the XML given here is the
 * signed content node-saml returns (never the posted document), so every value below is covered
 * by the identity provider's signature.
 */

/** Clock skew tolerated on every NotBefore / NotOnOrAfter (both directions). */
export const SAML_CLOCK_SKEW_MS = 60_000;

const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const EMAIL_ATTRIBUTES = ['email', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'];
const GROUP_ATTRIBUTES = ['groups', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups'];
const MAX_SUBJECT_CHARS = 1024;

export interface AssertionExpectations {
  idpEntityId: string;
  audience: string;
  recipient: string;
  requestId: string;
  now: Date;
}

export interface AssertionFacts {
  subject: string;
  email: string | null;
  groups: string[];
  assertionId: string;
  notOnOrAfter: Date | null;
}

export function checkSignedAssertion(signedAssertionXml: string, expected: AssertionExpectations): AssertionFacts {
  const assertion = parseXml(signedAssertionXml).documentElement;
  if (assertion.localName !== 'Assertion' || assertion.namespaceURI !== SAML_NS) {
    throw new SamlRejected('invalid_response');
  }
  const assertionId = assertion.getAttribute('ID');
  if (!assertionId) throw new SamlRejected('invalid_response');

  const issuer = one(assertion, 'Issuer');
  if (!issuer || text(issuer) !== expected.idpEntityId) throw new SamlRejected('issuer_mismatch');

  const subjectEl = one(assertion, 'Subject');
  const nameId = subjectEl ? one(subjectEl, 'NameID') : null;
  const subject = nameId ? text(nameId) : '';
  if (!subject || subject.length > MAX_SUBJECT_CHARS) throw new SamlRejected('missing_subject');

  const nowMs = expected.now.getTime();
  const confirmationEnd = checkBearerConfirmation(subjectEl as Element, expected, nowMs);
  const conditionsEnd = checkConditions(assertion, expected, nowMs);

  const attributes = readAttributes(assertion);
  const fromNameId = nameId?.getAttribute('Format') === EMAIL_FORMAT ? subject : null;
  const fromAttribute = EMAIL_ATTRIBUTES.map((n) => attributes.get(n)?.[0]).find((v) => v);
  const email = asEmail(fromNameId ?? fromAttribute ?? null);
  const groups = [...new Set(GROUP_ATTRIBUTES.flatMap((n) => attributes.get(n) ?? []))].filter((g) => g.length > 0);

  const ends = [confirmationEnd, conditionsEnd].filter((d): d is number => d !== null);
  return { subject, email, groups, assertionId, notOnOrAfter: ends.length ? new Date(Math.min(...ends)) : null };
}

/**
 * Web SSO profile (saml-profiles §4.1.4.2): a bearer SubjectConfirmation whose data names our ACS
 * as Recipient, answers our AuthnRequest, and is within its time window. Returns its NotOnOrAfter.
 */
function checkBearerConfirmation(subject: Element, expected: AssertionExpectations, nowMs: number): number | null {
  let firstFailure: SamlRejectReason = 'invalid_response';
  for (const confirmation of childrenNamed(subject, SAML_NS, 'SubjectConfirmation')) {
    if (confirmation.getAttribute('Method') !== BEARER) continue;
    const data = one(confirmation, 'SubjectConfirmationData');
    const failure = !data
      ? 'invalid_response'
      : data.getAttribute('Recipient') !== expected.recipient
        ? 'destination_mismatch'
        : data.getAttribute('InResponseTo') !== expected.requestId
          ? 'in_response_to_mismatch'
          : timeWindowFailure(data, nowMs);
    if (!failure) return instant(data!.getAttribute('NotOnOrAfter'));
    if (firstFailure === 'invalid_response') firstFailure = failure;
  }
  throw new SamlRejected(firstFailure);
}

/** Conditions: time window and an AudienceRestriction naming our entity id. Returns NotOnOrAfter. */
function checkConditions(assertion: Element, expected: AssertionExpectations, nowMs: number): number | null {
  const all = childrenNamed(assertion, SAML_NS, 'Conditions');
  if (all.length !== 1) throw new SamlRejected(all.length ? 'invalid_response' : 'audience_mismatch');
  const conditions = all[0];
  const failure = timeWindowFailure(conditions, nowMs);
  if (failure) throw new SamlRejected(failure);
  // Every AudienceRestriction must include us (saml-core §2.5.1.4); at least one must exist.
  const restrictions = childrenNamed(conditions, SAML_NS, 'AudienceRestriction');
  if (restrictions.length === 0) throw new SamlRejected('audience_mismatch');
  for (const r of restrictions) {
    if (!childrenNamed(r, SAML_NS, 'Audience').some((a) => text(a) === expected.audience)) {
      throw new SamlRejected('audience_mismatch');
    }
  }
  return instant(conditions.getAttribute('NotOnOrAfter'));
}

function timeWindowFailure(el: Element, nowMs: number): 'expired' | 'not_yet_valid' | 'invalid_response' | null {
  const notBeforeRaw = el.getAttribute('NotBefore');
  const notOnOrAfterRaw = el.getAttribute('NotOnOrAfter');
  const notBefore = instant(notBeforeRaw);
  const notOnOrAfter = instant(notOnOrAfterRaw);
  if ((notBeforeRaw && notBefore === null) || (notOnOrAfterRaw && notOnOrAfter === null)) return 'invalid_response';
  if (notBefore !== null && nowMs + SAML_CLOCK_SKEW_MS < notBefore) return 'not_yet_valid';
  if (notOnOrAfter !== null && nowMs - SAML_CLOCK_SKEW_MS >= notOnOrAfter) return 'expired';
  return null;
}

/** xs:dateTime as milliseconds; null when absent or unreadable. */
function instant(value: string | null): number | null {
  if (!value) return null;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** Attribute name → its values (text of each AttributeValue), across all AttributeStatements. */
function readAttributes(assertion: Element): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const statement of childrenNamed(assertion, SAML_NS, 'AttributeStatement')) {
    for (const attribute of childrenNamed(statement, SAML_NS, 'Attribute')) {
      const name = attribute.getAttribute('Name');
      if (!name) continue;
      const values = childrenNamed(attribute, SAML_NS, 'AttributeValue').map(text).filter((v) => v.length > 0);
      out.set(name, [...(out.get(name) ?? []), ...values]);
    }
  }
  return out;
}

function asEmail(value: string | null): string | null {
  return value && /^[^\s@]+@[^\s@]+$/.test(value) && value.length <= 320 ? value : null;
}

function one(parent: Element, localName: string): Element | null {
  return childrenNamed(parent, SAML_NS, localName)[0] ?? null;
}

/** All text below the element, trimmed (comments split text nodes; the signed form has none). */
function text(el: Element): string {
  return (el.textContent ?? '').trim();
}
