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
  const compile = ajv.compile.bind(ajv);
  ajv.compile = ((schema: object, meta?: boolean) => {
    recordOneOfs(schema, schema);
    return compile(schema, meta);
  }) as typeof ajv.compile;
  return ajv as unknown as Ajv;
}

/**
 * The request schema each `oneOf` was compiled in. openapi-backend compiles a request's schema
 * with every repeated subschema replaced by a `$ref` to its first place (its `decycle`), so a
 * oneOf's branches can only be read, or checked again on their own, against that root
 * (src/http/errors.ts explains a failed oneOf so).
 */
const oneOfRoots = new WeakMap<object, object>();

export function rootOfOneOf(branches: unknown): object | undefined {
  return typeof branches === 'object' && branches !== null ? oneOfRoots.get(branches) : undefined;
}

function recordOneOfs(node: unknown, root: object): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    for (const item of node) recordOneOfs(item, root);
    return;
  }
  const oneOf = (node as { oneOf?: unknown }).oneOf;
  if (Array.isArray(oneOf)) oneOfRoots.set(oneOf, root);
  for (const value of Object.values(node)) recordOneOfs(value, root);
}
