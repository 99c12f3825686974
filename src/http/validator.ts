import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type Ajv from 'ajv';
import type { Options } from 'ajv';
import { isTypeId } from '../lib/ids';

/**
 * openapi-backend ships a draft-07 AJV; the spec is OpenAPI 3.1 (JSON Schema 2020-12), so every
 * validator is built on Ajv2020 with the standard formats and our `typeid` format.
 */
export function createAjv(options: Options): Ajv {
  // verbose: an error carries its schema, so a `not` can say what is allowed (`x-not-message`).
  const ajv = new Ajv2020({ ...options, strict: false, allErrors: true, verbose: true });
  addFormats(ajv);
  ajv.addFormat('typeid', { type: 'string', validate: isTypeId });
  // OpenAPI keywords AJV does not know; harmless annotations.
  ajv.addKeyword({ keyword: 'example' });
  return ajv as unknown as Ajv;
}
