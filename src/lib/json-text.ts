import { randomBytes } from 'node:crypto';

/*
 * JSON text made elsewhere, placed into a response body as it is.
 *
 * Why: GET /v1/org's teams (the caller's teams, each with its member count) are aggregated by
 * Postgres as JSON already. Parsing that text into objects, mapping them and serialising them
 * again is work the response does not need: when the teams still carried every member id, sending
 * the text as it is took GET /v1/org at 200 members from 0.57x to 0.64x of the bench's bare floor.
 * A `JsonText` carries the text to `serializeBody`, which splices it in unchanged.
 *
 * The SQL that makes the text is the mapper then: it must produce exactly the contract's shape.
 * Tests check every response against the spec after serialisation (the router's checkResponse
 * parses what is sent), so a shape the contract does not declare fails there.
 */

/** Unique per process, so no stored string can pose as a placeholder. */
const TOKEN = `\u0000json-text:${randomBytes(12).toString('hex')}:`;
/** The placeholder as JSON.stringify writes it (the NUL escaped), with the fragment's index. */
const PLACEHOLDER = new RegExp(`"${JSON.stringify(TOKEN).slice(1, -1).replace(/\\/g, '\\\\')}(\\d+)"`, 'g');

/** Fragments met by the serialisation under way (JSON.stringify is synchronous, so one at a time). */
let fragments: string[] | null = null;

export class JsonText {
  constructor(readonly text: string) {}

  /** Inside serializeBody a placeholder; anywhere else (a log line) the parsed value, slowly but correctly. */
  toJSON(): unknown {
    if (!fragments) return JSON.parse(this.text);
    fragments.push(this.text);
    return TOKEN + String(fragments.length - 1);
  }
}

/**
 * A value of type T that is already JSON text. Only for response bodies: the value is opaque
 * (a JsonText, not a T) to everything but serializeBody, so nothing may read it as a T.
 */
export function jsonText<T>(text: string): T {
  return new JsonText(text) as unknown as T;
}

/** JSON.stringify(body), with every JsonText's text in its place. */
export function serializeBody(body: unknown): string {
  // A whole body made as JSON text (GET /v1/org's context) is the answer as it is.
  if (body instanceof JsonText) return body.text;
  const outer = fragments;
  const met: string[] = [];
  fragments = met;
  let text: string;
  try {
    text = JSON.stringify(body);
  } finally {
    fragments = outer;
  }
  if (met.length === 0) return text;
  return text.replace(PLACEHOLDER, (_match, index: string) => met[Number(index)]!);
}
