/**
 * What a client may send as JSON, checked once where bodies are parsed (src/server/app.ts), before any
 * route, validator or handler walks the value:
 *
 * - no key that reaches an object's prototype machinery (`__proto__`, `constructor`,
 *   `prototype`): code that copies client keys into objects (SCIM attributes, merges of free-form
 *   config) would otherwise write onto `Object.prototype` for the whole process;
 * - a bounded depth: recursive code (validators, `structuredClone`, `JSON.stringify`, mappers)
 *   overflows the stack on a 10,000-deep value, which surfaced as a 500;
 * - a bounded number of values: a body within the byte limit can still hold half a million array
 *   elements, each of which the validator and the handler then visit.
 *
 * The walk is iterative (its own stack), so the check itself cannot overflow.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Deepest nesting of objects and arrays a body may have (the body itself is depth 1). */
export const MAX_JSON_DEPTH = 64;
/** Most values (objects, arrays, strings, numbers, booleans, nulls) one body may hold. */
export const MAX_JSON_VALUES = 100_000;

export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

export interface ShapeProblem {
  /** Where, from the body's root (`['body', 'content', '__proto__']`). */
  path: string[];
  message: string;
}

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | null;
  key: string;
}

function pathOf(frame: Frame | null, root: string): string[] {
  const out: string[] = [];
  for (let f = frame; f && f.parent; f = f.parent) out.push(f.key);
  out.push(root);
  return out.reverse();
}

/** The first problem of a parsed JSON value, or null when it may go on. */
export function jsonShapeProblem(value: unknown, root = 'body', limits = { depth: MAX_JSON_DEPTH, values: MAX_JSON_VALUES }): ShapeProblem | null {
  if (value === null || typeof value !== 'object') return null;
  const stack: Frame[] = [{ value, depth: 1, parent: null, key: '' }];
  let values = 1;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.depth > limits.depth) {
      return { path: pathOf(frame, root), message: `nests deeper than ${limits.depth} levels` };
    }
    const node = frame.value as Record<string, unknown> | unknown[];
    if (Array.isArray(node)) {
      values += node.length;
      if (values > limits.values) return { path: pathOf(frame, root), message: `the body holds more than ${limits.values} values` };
      for (let i = node.length - 1; i >= 0; i--) {
        const child = node[i];
        if (child !== null && typeof child === 'object') stack.push({ value: child, depth: frame.depth + 1, parent: frame, key: String(i) });
      }
      continue;
    }
    for (const key in node) {
      // JSON.parse makes own properties only, `__proto__` included; `for…in` sees exactly those.
      if (FORBIDDEN_KEYS.has(key)) return { path: [...pathOf(frame, root), key], message: `"${key}" is not allowed as a key` };
      values += 1;
      if (values > limits.values) return { path: pathOf(frame, root), message: `the body holds more than ${limits.values} values` };
      const child = node[key];
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: frame.depth + 1, parent: frame, key });
    }
  }
  return null;
}
