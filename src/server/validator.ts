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
  // validateSchema off: openapi-backend makes a new AJV for every validator it compiles, and each
  // compiled the 2020-12 meta-schema again to check one schema (80 % of the service's start-up
  // CPU, and of every test file's first requests). The contract's schemas are checked against the
  // meta-schema once instead, by checkSchemas at start.
  const ajv = new Ajv2020({ ...options, strict: false, allErrors: true, verbose: true, validateSchema: false });
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
 * (src/server/errors.ts explains a failed oneOf so).
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

/** Keys of an OpenAPI document whose values are free-form (examples, extensions), not structure. */
const FREE_FORM = (key: string) => key === 'example' || key === 'examples' || key.startsWith('x-');

/**
 * Checks every Schema Object of an OpenAPI 3.1 document against the JSON Schema 2020-12
 * meta-schema with one AJV (the validators are compiled without that check: see createAjv), so a
 * malformed schema still fails the start. Throws naming the first malformed schema's location.
 */
export function checkSchemas(document: object): void {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  const visit = (node: unknown, at: string[], isSchema: boolean): void => {
    if (typeof node !== 'object' || node === null) return;
    if (isSchema) {
      if (!ajv.validateSchema(node as object)) throw new Error(`the schema at ${at.join('.')} is not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
      return;
    }
    // Every value of components.schemas is a schema; elsewhere a schema is the value of a `schema` key.
    const inSchemas = at.length === 2 && at[0] === 'components' && at[1] === 'schemas';
    for (const [key, value] of Object.entries(node)) {
      if (!FREE_FORM(key)) visit(value, [...at, key], inSchemas || key === 'schema');
    }
  };
  visit(document, [], false);
}
