import { ERROR_CODES, isErrorCode, statusesOf } from '../../src/lib/error-codes';
import { codeSide, codesOfSchema, contractOperations, contractSide, deref, differences, loadBundle, speaksCodes } from '../../scripts/error-contract';

/**
 * The error codes of the contract against the code, both ways: every code an operation can
 * answer (read from its handler's reach by scripts/error-analysis.ts, plus the router's own
 * answers) is in that operation's enum for the status, and every enum value is one the operation
 * can answer. `npm run spec:errors` prints the differences and rewrites the contract's lists.
 */
/** Answers of the process, not of an operation (the router's unknown path, the test-only guard). */
const PROCESS_CODES = new Set(['not_found', 'method_not_allowed', 'payload_too_large', 'unsupported_media_type', 'internal_error', 'response_validation_failed', 'not_implemented', 'service_unavailable']);

describe('error codes: the contract and the code', () => {
  const doc = loadBundle();
  const { expected, unresolved } = codeSide(doc);
  const listed = contractSide(doc);

  it('reads every error the handlers can throw (no code it cannot name)', () => {
    expect(unresolved).toEqual([]);
    expect(expected.size).toBeGreaterThan(100);
  });

  it('lists, per operation and status, exactly the codes the operation can answer', () => {
    expect(differences(expected, listed)).toEqual([]);
  });

  it('uses only codes of src/lib/error-codes.ts, each with its own status', () => {
    const wrong: string[] = [];
    for (const [operationId, byStatus] of listed) {
      for (const [status, codes] of byStatus) {
        for (const code of codes ?? []) {
          if (!isErrorCode(code)) wrong.push(`${operationId} ${status}: ${code} is not in src/lib/error-codes.ts`);
          else if (!statusesOf(code).includes(status)) wrong.push(`${operationId} ${status}: ${code} is a ${statusesOf(code).join('/')} code`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('names the codes of every error response an operation declares (no free-string `error`), 413 and 503 included', () => {
    const free: string[] = [];
    for (const op of contractOperations(doc).filter(speaksCodes)) {
      for (const [status, response] of Object.entries((op.op.responses ?? {}) as Record<string, unknown>)) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const schema = (deref(doc, response).content as Record<string, { schema?: unknown }> | undefined)?.['application/json']?.schema;
        if (schema && codesOfSchema(doc, schema, Number(status)) === null) free.push(`${op.operationId} ${status}`);
      }
    }
    expect(free).toEqual([]);
  });

  it('answers every code of the list somewhere (no dead codes)', () => {
    const answered = new Set([...expected.values()].flatMap((byStatus) => [...byStatus.values()].flatMap((codes) => [...codes])));
    const dead = Object.keys(ERROR_CODES).filter((code) => !PROCESS_CODES.has(code) && !answered.has(code));
    expect(dead).toEqual([]);
  });
});
