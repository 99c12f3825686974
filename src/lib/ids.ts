import { TypeID, typeid } from 'typeid-js';

/** Every id prefix the service mints (supporting-interface §1). One list, so a typo is a compile error. */
export const ID_PREFIXES = {
  organization: 'org',
  member: 'om',
  user: 'usr',
  session: 'ses',
  team: 'tem',
  invitation: 'inv',
  apiKey: 'apk',
  plugin: 'plg',
  pluginComponent: 'cob',
  marketplace: 'mkt',
  marketplaceGrant: 'mag',
  pluginGrant: 'pag',
  connectorInstance: 'cin',
  connectorInstanceGrant: 'cia',
  mcpConnection: 'emc',
  mcpConnectionGrant: 'mcg',
  connectedAccount: 'cta',
  worker: 'wrk',
  workerActivity: 'wac',
  telemetryEvent: 'tev',
  auditEntry: 'aud',
  event: 'evt',
  webhook: 'whk',
  webhookDelivery: 'whd',
  template: 'tpl',
  llmProvider: 'llp',
  llmProviderGrant: 'lpg',
  scimToken: 'sct',
  role: 'rol',
  ssoConnection: 'ssc',
  ssoDomain: 'dom',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A new time-sortable TypeID of the given kind, e.g. `newId('marketplace')` → `mkt_01h…`. */
export function newId(kind: IdKind): string {
  return typeid(ID_PREFIXES[kind]).toString();
}

const TYPEID_SHAPE = /^[a-z]{1,63}_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

/** True when `value` is a syntactically valid TypeID (any prefix); used by the AJV `typeid` format. */
export function isTypeId(value: string): boolean {
  if (!TYPEID_SHAPE.test(value)) return false;
  try {
    TypeID.fromString(value);
    return true;
  } catch {
    return false;
  }
}
