import { SamlRejected } from './rejected';
import { lazy } from '../../lib/lazy';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const xmldom = lazy(() => require('@xmldom/xmldom') as typeof import('@xmldom/xmldom'));

/**
 * Decoding and parsing of the posted SAMLResponse, before anything is trusted. Everything read here
 * from the envelope (Destination, InResponseTo, Status) is unsigned when only the assertion is
 * signed: it is checked as a quick refusal, never relied on alone — the signed assertion carries
 * the same facts (Recipient, InResponseTo) and those are checked again in ./assertion.
 */

export const SAMLP_NS = 'urn:oasis:names:tc:SAML:2.0:protocol';
export const SAML_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const STATUS_SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

/** A response with a few hundred groups is ~100 KB; far beyond this is not a login. */
const MAX_BASE64_CHARS = 1_000_000;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The XML text of a base64 SAMLResponse; junk, oversized input and any DTD are refused. */
export function decodeSamlResponse(samlResponseBase64: string): string {
  if (typeof samlResponseBase64 !== 'string' || samlResponseBase64.length > MAX_BASE64_CHARS) {
    throw new SamlRejected('malformed_response');
  }
  // Some identity providers wrap the base64 at 64/76 columns.
  const compact = samlResponseBase64.replace(/[\r\n\t ]/g, '');
  if (compact.length === 0 || compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new SamlRejected('malformed_response');
  }
  let xml: string;
  try {
    xml = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
  } catch {
    throw new SamlRejected('malformed_response');
  }
  // SAML never needs a DTD (saml-core §6.4.1); refusing it outright rules out entity expansion
  // and external entities (XXE) whatever the parsers below would do with one.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new SamlRejected('malformed_response');
  return xml;
}

/** Parses XML text; any parser error or warning-level junk outside the root is a refusal. */
export function parseXml(xml: string): Document {
  const fail = () => {
    throw new SamlRejected('malformed_response');
  };
  let doc: Document;
  try {
    doc = new (xmldom().DOMParser)({ errorHandler: { warning: () => undefined, error: fail, fatalError: fail } })
      .parseFromString(xml, 'text/xml') as unknown as Document;
  } catch {
    throw new SamlRejected('malformed_response');
  }
  if (!doc || !doc.documentElement) throw new SamlRejected('malformed_response');
  return doc;
}

export interface SamlEnvelope {
  destination: string | null;
  inResponseTo: string | null;
  statusCode: string | null;
}

/** Reads the unsigned envelope of a samlp:Response (the root element). */
export function readEnvelope(doc: Document): SamlEnvelope {
  const root = doc.documentElement;
  if (root.localName !== 'Response' || root.namespaceURI !== SAMLP_NS) {
    throw new SamlRejected('malformed_response');
  }
  const status = childrenNamed(root, SAMLP_NS, 'Status')[0];
  const code = status ? childrenNamed(status, SAMLP_NS, 'StatusCode')[0] : undefined;
  return {
    destination: root.getAttribute('Destination') || null,
    inResponseTo: root.getAttribute('InResponseTo') || null,
    statusCode: code?.getAttribute('Value') || null,
  };
}

export function isSuccess(envelope: SamlEnvelope): boolean {
  return envelope.statusCode === STATUS_SUCCESS;
}

/** Direct element children with this namespace and local name (never descendants: wrapping). */
export function childrenNamed(parent: Element, ns: string, localName: string): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1) {
      const el = n as Element;
      if (el.localName === localName && el.namespaceURI === ns) out.push(el);
    }
  }
  return out;
}

/**
 * The InResponseTo of a posted response, read WITHOUT verifying anything: only for finding the
 * login state when RelayState is missing. Null when the input is not a readable response.
 */
export function peekSamlInResponseTo(samlResponseBase64: string): string | null {
  try {
    return readEnvelope(parseXml(decodeSamlResponse(samlResponseBase64))).inResponseTo;
  } catch {
    return null;
  }
}
