import { checkSchemas } from './validator';
import { contract, createBackend, initBackend } from './openapi';

/**
 * Validators are compiled without AJV's meta-schema check (createAjv says why); checkSchemas
 * checks every schema of the contract once instead, so a malformed one still fails the start.
 */
type Doc = Record<string, any>;
const copy = () => structuredClone(contract) as Doc;

it('finds the contract well-formed', () => {
  expect(() => checkSchemas(copy())).not.toThrow();
});

it('refuses a malformed schema wherever the document holds one, naming where', () => {
  const inComponents = copy();
  inComponents.components.schemas.Timestamp.minLength = 'one';
  expect(() => checkSchemas(inComponents)).toThrow('components.schemas.Timestamp is not a valid JSON Schema: data/minLength must be integer');

  const inParameter = copy();
  inParameter.components.parameters.Limit.schema.maximum = 'many';
  expect(() => checkSchemas(inParameter)).toThrow('components.parameters.Limit.schema is not a valid JSON Schema');

  const inBody = copy();
  inBody.paths['/v1/teams'].post.requestBody.content['application/json'].schema = { type: 'object', required: 'name' };
  expect(() => checkSchemas(inBody)).toThrow("paths./v1/teams.post.requestBody.content.application/json.schema is not a valid JSON Schema");
});

it('leaves examples and extensions alone (free-form values, not schemas)', () => {
  const doc = copy();
  doc.components.schemas.Timestamp.example = { schema: { type: 'no such type' } };
  doc['x-notes'] = { schema: { minLength: 'one' } };
  expect(() => checkSchemas(doc)).not.toThrow();
});

it('keeps the service from starting on a malformed schema', async () => {
  const doc = copy();
  doc.components.schemas.Timestamp.minLength = 'one';
  await expect(initBackend(createBackend(doc as typeof contract), { compileResponseValidators: false })).rejects.toThrow('components.schemas.Timestamp');
});
