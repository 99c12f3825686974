import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA, type JsonObject } from './attributes';
import { listResponse } from './common';
import { scimNotFound } from './errors';

/** RFC 7643 §5–§7 discovery documents: what this endpoint supports and the schemas it speaks. */
export function serviceProviderConfig(baseUrl: string, maxResults: number): JsonObject {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${baseUrl.replace(/\/scim\/v2$/, '')}/docs`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'SCIM token',
        description: 'A SCIM token of the organization (POST /v1/scim/tokens), sent as Authorization: Bearer <token>.',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

const RESOURCE_TYPES = (baseUrl: string): JsonObject[] => [
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'User',
    name: 'User',
    endpoint: '/Users',
    description: "A directory user: the identity provider's record, linked to a member when it can be.",
    schema: USER_SCHEMA,
    schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/User` },
  },
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'Group',
    name: 'Group',
    endpoint: '/Groups',
    description: 'A team of the organization.',
    schema: GROUP_SCHEMA,
    schemaExtensions: [],
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/Group` },
  },
];

export function resourceTypes(baseUrl: string) {
  const all = RESOURCE_TYPES(baseUrl);
  return listResponse(all.length, 1, all);
}

export function resourceType(baseUrl: string, name: string): JsonObject {
  const found = RESOURCE_TYPES(baseUrl).find((r) => String(r.id).toLowerCase() === name.toLowerCase());
  if (!found) throw scimNotFound('ResourceType', name);
  return found;
}

type AttrOptions = Partial<{ multiValued: boolean; required: boolean; caseExact: boolean; mutability: string; returned: string; uniqueness: string; subAttributes: JsonObject[]; referenceTypes: string[] }>;

function attr(name: string, type: string, description: string, options: AttrOptions = {}): JsonObject {
  return {
    name,
    type,
    multiValued: options.multiValued ?? false,
    description,
    required: options.required ?? false,
    caseExact: options.caseExact ?? false,
    mutability: options.mutability ?? 'readWrite',
    returned: options.returned ?? 'default',
    uniqueness: options.uniqueness ?? 'none',
    ...(options.subAttributes ? { subAttributes: options.subAttributes } : {}),
    ...(options.referenceTypes ? { referenceTypes: options.referenceTypes } : {}),
  };
}

const multiValue = (what: string) => [
  attr('value', 'string', `The ${what}.`),
  attr('display', 'string', 'A human-readable name.'),
  attr('type', 'string', `The kind of ${what} (work, home, other).`),
  attr('primary', 'boolean', `Whether this is the primary ${what}.`),
];

const USER_ATTRIBUTES: JsonObject[] = [
  attr('userName', 'string', 'Any identifier the provider chooses (1..255 characters); unique in the organization ignoring case.', { required: true, uniqueness: 'server' }),
  attr('name', 'complex', "The user's name.", {
    subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => attr(n, 'string', `The ${n} part of the name.`)),
  }),
  attr('displayName', 'string', 'The name shown for the user.'),
  attr('nickName', 'string', 'A casual name.'),
  attr('title', 'string', "The user's title."),
  attr('userType', 'string', 'The relationship to the organization.'),
  attr('preferredLanguage', 'string', 'Preferred language.'),
  attr('locale', 'string', 'Locale for localisation.'),
  attr('timezone', 'string', 'Time zone (IANA).'),
  attr('active', 'boolean', 'false suspends the member (sessions and API keys stop reaching the organization).'),
  attr('password', 'string', 'Accepted and ignored; never returned (users sign in through SSO).', { mutability: 'writeOnly', returned: 'never' }),
  attr('emails', 'complex', 'E-mail addresses.', { multiValued: true, subAttributes: multiValue('e-mail address') }),
  attr('phoneNumbers', 'complex', 'Phone numbers.', { multiValued: true, subAttributes: multiValue('phone number') }),
  attr('addresses', 'complex', 'Physical addresses.', {
    multiValued: true,
    subAttributes: ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((n) => attr(n, 'string', `The ${n} of the address.`)),
  }),
  attr('roles', 'complex', 'Roles given by the identity provider (stored as given).', { multiValued: true, subAttributes: multiValue('role') }),
];

const SCHEMAS = (baseUrl: string): JsonObject[] => [
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: USER_SCHEMA,
    name: 'User',
    // RFC 7643 §8.7.1 describes the core User schema so (Microsoft's validator looks for it).
    description: 'User Account',
    attributes: USER_ATTRIBUTES,
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${USER_SCHEMA}` },
  },
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: GROUP_SCHEMA,
    name: 'Group',
    description: 'A team of the organization.',
    attributes: [
      attr('displayName', 'string', 'The team name; unique in the organization ignoring case.', { required: true, uniqueness: 'server' }),
      attr('members', 'complex', 'Members of the team.', {
        multiValued: true,
        subAttributes: [
          attr('value', 'string', 'The User (directory user) id.', { mutability: 'immutable', caseExact: true }),
          attr('$ref', 'reference', 'The URI of the User.', { mutability: 'immutable', referenceTypes: ['User'] }),
          attr('display', 'string', 'A human-readable name.', { mutability: 'readOnly' }),
        ],
      }),
    ],
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${GROUP_SCHEMA}` },
  },
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: ENTERPRISE_SCHEMA,
    name: 'EnterpriseUser',
    description: 'Enterprise User extension (stored and returned as given).',
    attributes: [
      attr('employeeNumber', 'string', 'Employee number.'),
      attr('costCenter', 'string', 'Cost center.'),
      attr('organization', 'string', 'Organization.'),
      attr('division', 'string', 'Division.'),
      attr('department', 'string', 'Department.'),
      attr('manager', 'complex', "The user's manager.", {
        subAttributes: [attr('value', 'string', "The manager's id."), attr('$ref', 'reference', "The manager's URI.", { referenceTypes: ['User'] }), attr('displayName', 'string', "The manager's name.", { mutability: 'readOnly' })],
      }),
    ],
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${ENTERPRISE_SCHEMA}` },
  },
];

export function schemas(baseUrl: string) {
  const all = SCHEMAS(baseUrl);
  return listResponse(all.length, 1, all);
}

export function schema(baseUrl: string, id: string): JsonObject {
  const found = SCHEMAS(baseUrl).find((s) => String(s.id).toLowerCase() === id.toLowerCase());
  if (!found) throw scimNotFound('Schema', id);
  return found;
}
