import { AppError } from '../lib/errors';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** RFC 7644 §3.12 `scimType` values. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export interface ScimErrorBody {
  schemas: [typeof SCIM_ERROR_SCHEMA];
  status: string;
  scimType?: ScimType;
  detail?: string;
}

export function scimErrorBody(status: number, detail: string, scimType?: ScimType): ScimErrorBody {
  return { schemas: [SCIM_ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

export function isScimErrorBody(body: unknown): body is ScimErrorBody {
  const schemas = (body as { schemas?: unknown } | null)?.schemas;
  return Array.isArray(schemas) && schemas.includes(SCIM_ERROR_SCHEMA);
}

/** An error of the /scim/v2 routes, in the SCIM error body. */
export class ScimError extends AppError {
  constructor(readonly status: number, readonly scimType: ScimType | undefined, detail: string) {
    super(detail);
  }
  body() {
    return scimErrorBody(this.status, this.message, this.scimType) as unknown as Record<string, unknown>;
  }
}

export const scimInvalid = (scimType: ScimType, detail: string) => new ScimError(400, scimType, detail);
export const scimNotFound = (what: 'User' | 'Group' | 'ResourceType' | 'Schema', id: string) =>
  new ScimError(404, undefined, `${what} ${JSON.stringify(id.slice(0, 100))} not found.`);
export const scimConflict = (detail: string) => new ScimError(409, 'uniqueness', detail);
