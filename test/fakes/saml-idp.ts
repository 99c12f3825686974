import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as validator from '@authenio/samlify-node-xmllint';
import * as samlify from 'samlify';
import type { SamlIdpConfig, SamlSpConfig } from '../../src/sso/saml';

/**
 * A SAML identity provider for tests, on samlify (a real SAML implementation, independent of the
 * node-saml our service uses). It reads our HTTP-Redirect AuthnRequest (schema-validated by
 * xmllint) and answers with an HTTP-POST Response signed by samlify, with knobs that produce the
 * responses an attacker or a misconfigured IdP would send. Tampering after signing: see
 * ./saml-tamper.ts. Keys are TEST-ONLY fixtures (test/fixtures/saml/README.md).
 */

let schemaValidation = true;

/**
 * For a file that signs in through SAML without testing SAML (the hardening walks): the IdP stops
 * schema-validating our AuthnRequest. xmllint (libxml2 compiled to JavaScript) takes ~10 s to
 * start in each test file; test/sso/saml.test.ts and test/api/sso-saml*.test.ts keep validating.
 */
export function skipRequestSchemaValidation(): void {
  schemaValidation = false;
}

samlify.setSchemaValidator({
  // node-xmllint prints a blank line per validation; the validation itself runs synchronously
  // inside validate(), so console.log is quiet for exactly that long.
  validate: (xml: string) => {
    if (!schemaValidation) return Promise.resolve('not validated');
    const log = console.log;
    console.log = () => undefined;
    try {
      return validator.validate(xml);
    } finally {
      console.log = log;
    }
  },
});

const FIXTURES = join(__dirname, '..', 'fixtures', 'saml');
const pem = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

export const TEST_IDP_KEYS = {
  idp: { privateKey: pem('idp.key.pem'), certificate: pem('idp.cert.pem') },
  /** An unrelated key pair (an attacker's). */
  other: { privateKey: pem('other-idp.key.pem'), certificate: pem('other-idp.cert.pem') },
};

export const NAMEID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
export const NAMEID_PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
export const ATTR_EMAIL_CLAIM = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress';
export const ATTR_GROUPS_CLAIM = 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups';

export interface SamlTestUser {
  nameId: string;
  /** Default emailAddress. */
  nameIdFormat?: string;
  /** Attribute name → one value or several. */
  attributes?: Record<string, string | string[]>;
}

export interface SamlResponseKnobs {
  /** What samlify signs. 'none' sends the Response unsigned. Default 'response'. */
  sign?: 'response' | 'assertion' | 'both' | 'none';
  /** Sign with the attacker's key and put ITS certificate in KeyInfo. */
  signWithOtherKey?: boolean;
  /** Time the response is issued at (default now); the validity window is built around it. */
  now?: Date;
  /**
   * Conditions NotBefore (default now - 5 min, as Entra ID and Okta send it, which also keeps tests
   * whose app clock stands a little behind the real one valid) and NotOnOrAfter (default now + 5 min).
   */
  notBefore?: Date;
  notOnOrAfter?: Date;
  /** SubjectConfirmationData NotOnOrAfter (default = Conditions NotOnOrAfter). */
  subjectNotOnOrAfter?: Date;
  audience?: string;
  /** Response Destination (default the ACS URL). */
  destination?: string;
  /** SubjectConfirmationData Recipient (default the ACS URL). */
  recipient?: string;
  /** Response InResponseTo (default the request id). */
  inResponseTo?: string;
  /** SubjectConfirmationData InResponseTo (default = inResponseTo). */
  subjectInResponseTo?: string;
  /** Issuer of Response and Assertion (default this IdP's entity id). */
  issuer?: string;
  statusCode?: string;
  assertionId?: string;
}

export interface IssuedSamlResponse {
  /** Base64 SAMLResponse, as the browser form posts it. */
  samlResponse: string;
  /** The XML (for tampering helpers). */
  xml: string;
  assertionId: string;
  responseId: string;
}

export interface ParsedAuthnRequest {
  requestId: string;
  relayState: string | null;
  acsUrl: string | null;
  issuer: string;
}

const ATTRIBUTES_SLOT = '<!--attributes-->';
const STATUS_SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const FIVE_MINUTES = 5 * 60_000;

export class SamlTestIdp {
  readonly entityId: string;
  readonly ssoUrl: string;
  readonly certificate = TEST_IDP_KEYS.idp.certificate;

  constructor(options: { entityId?: string; ssoUrl?: string } = {}) {
    const tag = randomBytes(4).toString('hex');
    this.entityId = options.entityId ?? `https://idp.test/${tag}/metadata`;
    this.ssoUrl = options.ssoUrl ?? `https://idp.test/${tag}/sso`;
  }

  /** What a SAML connection of ours holds for this IdP. */
  config(): SamlIdpConfig {
    return { idpEntityId: this.entityId, idpSsoUrl: this.ssoUrl, idpCertificate: this.certificate };
  }

  /** Reads our AuthnRequest from the redirect URL (samlify parses it and xmllint validates it). */
  async parseAuthnRequest(authorizeUrl: string, sp: SamlSpConfig): Promise<ParsedAuthnRequest> {
    const url = new URL(authorizeUrl);
    const query = Object.fromEntries(url.searchParams.entries());
    const { extract } = await this.samlifyIdp(false).parseLoginRequest(this.samlifySp(sp, 'response'), 'redirect', { query });
    const request = extract.request as Record<string, string>;
    return {
      requestId: request.id,
      relayState: url.searchParams.get('RelayState'),
      acsUrl: request.assertionConsumerServiceUrl ?? null,
      issuer: String(extract.issuer),
    };
  }

  /** Parses the AuthnRequest in `authorizeUrl` and answers it (what a browser would then POST). */
  async answer(authorizeUrl: string, sp: SamlSpConfig, user: SamlTestUser, knobs: SamlResponseKnobs = {}) {
    const request = await this.parseAuthnRequest(authorizeUrl, sp);
    const issued = await this.respond(sp, request.requestId, user, knobs);
    return { ...issued, relayState: request.relayState, requestId: request.requestId };
  }

  /** A login Response to request `requestId` for `user`. */
  async respond(sp: SamlSpConfig, requestId: string, user: SamlTestUser, knobs: SamlResponseKnobs = {}): Promise<IssuedSamlResponse> {
    const now = knobs.now ?? new Date();
    const notOnOrAfter = knobs.notOnOrAfter ?? new Date(now.getTime() + FIVE_MINUTES);
    const responseId = `_r${randomBytes(16).toString('hex')}`;
    const assertionId = knobs.assertionId ?? `_a${randomBytes(16).toString('hex')}`;
    const inResponseTo = knobs.inResponseTo ?? requestId;
    // Attribute values are escaped by attributeStatement and inserted after the tag replacement,
    // so a value that looks like a {Tag} stays literal.
    const xml = samlify.SamlLib.replaceTagsByValue(RESPONSE_TEMPLATE.replace('{AttributeStatement}', ATTRIBUTES_SLOT), {
      ID: responseId,
      AssertionID: assertionId,
      IssueInstant: now.toISOString(),
      Destination: knobs.destination ?? sp.acsUrl,
      InResponseTo: inResponseTo,
      Issuer: knobs.issuer ?? this.entityId,
      StatusCode: knobs.statusCode ?? STATUS_SUCCESS,
      NameIDFormat: user.nameIdFormat ?? NAMEID_EMAIL,
      NameID: user.nameId,
      SubjectNotOnOrAfter: (knobs.subjectNotOnOrAfter ?? notOnOrAfter).toISOString(),
      SubjectRecipient: knobs.recipient ?? sp.acsUrl,
      SubjectInResponseTo: knobs.subjectInResponseTo ?? inResponseTo,
      ConditionsNotBefore: (knobs.notBefore ?? new Date(now.getTime() - FIVE_MINUTES)).toISOString(),
      ConditionsNotOnOrAfter: notOnOrAfter.toISOString(),
      Audience: knobs.audience ?? sp.entityId,
    }).replace(ATTRIBUTES_SLOT, () => attributeStatement(user.attributes ?? {}));

    const sign = knobs.sign ?? 'response';
    let signed = xml;
    if (sign !== 'none') {
      const context = await this.samlifyIdp(knobs.signWithOtherKey ?? false).createLoginResponse(
        this.samlifySp(sp, sign),
        { extract: { request: { id: requestId } } },
        'post',
        { email: user.nameId },
        { customTagReplacement: () => ({ id: responseId, context: xml }) },
      );
      signed = Buffer.from(context.context, 'base64').toString('utf8');
    }
    return { samlResponse: Buffer.from(signed, 'utf8').toString('base64'), xml: signed, assertionId, responseId };
  }

  private samlifyIdp(otherKey: boolean) {
    const keys = otherKey ? TEST_IDP_KEYS.other : TEST_IDP_KEYS.idp;
    return samlify.IdentityProvider({
      entityID: this.entityId,
      privateKey: keys.privateKey,
      signingCert: keys.certificate,
      nameIDFormat: [NAMEID_EMAIL],
      singleSignOnService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: this.ssoUrl }],
      // Unused; without it samlify warns on every construction.
      singleLogoutService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: `${this.ssoUrl}/logout` }],
      wantAuthnRequestsSigned: false,
    });
  }

  /** Our SP as samlify sees it; its flags decide what samlify signs. */
  private samlifySp(sp: SamlSpConfig, sign: 'response' | 'assertion' | 'both') {
    return samlify.ServiceProvider({
      entityID: sp.entityId,
      assertionConsumerService: [{ Binding: samlify.Constants.namespace.binding.post, Location: sp.acsUrl }],
      singleLogoutService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: `${sp.acsUrl}/logout` }],
      wantAssertionsSigned: sign !== 'response',
      wantMessageSigned: sign !== 'assertion',
    });
  }
}

function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function attributeStatement(attributes: Record<string, string | string[]>): string {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return '';
  const body = entries
    .map(([name, value]) => {
      const values = (Array.isArray(value) ? value : [value])
        .map((v) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(v)}</saml:AttributeValue>`)
        .join('');
      return `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified">${values}</saml:Attribute>`;
    })
    .join('');
  return `<saml:AttributeStatement>${body}</saml:AttributeStatement>`;
}

// samlify's default login response, with separate tags for what the knobs change independently
// and an AuthnStatement (as real IdPs send).
const RESPONSE_TEMPLATE =
  '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="{ID}" Version="2.0" IssueInstant="{IssueInstant}" Destination="{Destination}" InResponseTo="{InResponseTo}">' +
  '<saml:Issuer>{Issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="{StatusCode}"/></samlp:Status>' +
  '<saml:Assertion xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" ID="{AssertionID}" Version="2.0" IssueInstant="{IssueInstant}">' +
  '<saml:Issuer>{Issuer}</saml:Issuer>' +
  '<saml:Subject><saml:NameID Format="{NameIDFormat}">{NameID}</saml:NameID>' +
  '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="{SubjectNotOnOrAfter}" Recipient="{SubjectRecipient}" InResponseTo="{SubjectInResponseTo}"/></saml:SubjectConfirmation></saml:Subject>' +
  '<saml:Conditions NotBefore="{ConditionsNotBefore}" NotOnOrAfter="{ConditionsNotOnOrAfter}"><saml:AudienceRestriction><saml:Audience>{Audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>' +
  '<saml:AuthnStatement AuthnInstant="{IssueInstant}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>' +
  '{AttributeStatement}</saml:Assertion></samlp:Response>';
