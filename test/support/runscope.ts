import assert from 'node:assert';
import { runInNewContext } from 'node:vm';

/**
 * A small interpreter of a Runscope API test export (the format of Okta's SCIM spec test): its
 * request steps run in order with `{{variable}}` substitution, values extracted into variables,
 * each assertion checked and each step's script run (with the response and `assert`). Pause steps are skipped; `response_time` assertions are not
 * checked (speed targets live in bench/, never in timed tests).
 */
export interface RunscopeAssertion {
  comparison: string;
  property?: string;
  value: string | null;
  source: string;
}
export interface RunscopeStep {
  step_type: string;
  method?: string;
  url?: string;
  note?: string;
  body?: string;
  headers?: Record<string, string[] | string>;
  assertions?: RunscopeAssertion[];
  variables?: { source: string; property: string; name: string }[];
  scripts?: string[];
}
export interface RunscopeFailure {
  step: string;
  assertion: string;
  actual: unknown;
}

const fill = (text: string, vars: Record<string, string>) => text.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => vars[name] ?? whole);

/** `Resources[0].name.familyName`; a name applied to an array maps over its elements. */
export function resolveProperty(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.match(/[^.[\]]+/g) ?? []) {
    if (Array.isArray(current) && !/^\d+$/.test(part)) current = current.map((el) => (el as Record<string, unknown> | null)?.[part]);
    else current = (current as Record<string, unknown> | null | undefined)?.[part];
  }
  return current;
}

const empty = (v: unknown) => v === undefined || v === null || v === '' || (Array.isArray(v) && v.every(empty)) || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);

function holds(assertion: RunscopeAssertion, status: number, json: unknown, vars: Record<string, string>): [boolean, unknown] {
  const expected = assertion.value === null ? null : fill(assertion.value, vars);
  const actual = assertion.source === 'response_status' ? status : resolveProperty(json, assertion.property ?? '');
  switch (assertion.comparison) {
    case 'equal_number':
      return [Number(actual) === Number(expected), actual];
    case 'equal':
      return [String(actual) === expected, actual];
    case 'not_empty':
      return [!empty(actual), actual];
    case 'is_a_number':
      return [typeof actual === 'number', actual];
    case 'contains':
    case 'has_value':
      // Runscope's has_value without a value: some element has one.
      if (expected === null) return [!empty(actual), actual];
      return [Array.isArray(actual) ? actual.map(String).includes(expected) : String(actual ?? '').includes(expected), actual];
    default:
      throw new Error(`Runscope comparison ${assertion.comparison} is not interpreted`);
  }
}

export async function runRunscope(steps: RunscopeStep[], vars: Record<string, string>, send: (req: { method: string; url: string; headers: Record<string, string>; body?: string }) => Promise<{ status: number; text: string }>) {
  const failures: RunscopeFailure[] = [];
  const ran: string[] = [];
  for (const step of steps) {
    if (step.step_type === 'pause') continue;
    if (step.step_type !== 'request') throw new Error(`Runscope step type ${step.step_type} is not interpreted`);
    const headers = Object.fromEntries(Object.entries(step.headers ?? {}).map(([name, values]) => [name, fill([values].flat().join(', '), vars)]));
    const res = await send({ method: step.method!, url: new URL(fill(step.url!, vars)).toString(), headers, body: step.body ? fill(step.body, vars) : undefined });
    ran.push(`${step.method} ${step.note}`);
    let json: unknown = undefined;
    try {
      json = JSON.parse(res.text);
    } catch {
      // Not JSON: only status assertions can hold.
    }
    for (const assertion of step.assertions ?? []) {
      if (assertion.source === 'response_time') continue;
      const [ok, actual] = holds(assertion, res.status, json, vars);
      if (!ok) failures.push({ step: step.note ?? '', assertion: `${assertion.property ?? assertion.source} ${assertion.comparison} ${assertion.value ?? ''}`.trim(), actual });
    }
    // Runscope's script context: the response and Chai-like `assert` (Node's has the same ok()).
    for (const script of (step.scripts ?? []).filter((x) => x.trim() !== '')) {
      try {
        runInNewContext(script, { response: { body: res.text, status: res.status }, assert, log: () => undefined, JSON });
      } catch (err) {
        failures.push({ step: step.note ?? '', assertion: 'script', actual: (err as Error).message });
      }
    }
    for (const v of step.variables ?? []) if (v.source === 'response_json') vars[v.name] = String(resolveProperty(json, v.property));
  }
  return { failures, ran };
}
