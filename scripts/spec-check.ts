// npm run spec:check (CI): lint, drift of generated/, and breaking changes against
// openapi/published.yaml. Runs every check, reports all failures, exits 1 if any failed.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { apiCompare } from 'api-smart-diff';
import { parse } from 'yaml';
import { OUTPUTS as CLIENT_OUTPUTS, packageVersion as clientPackageVersion, packageVersionFor, render as renderClient } from '../packages/client/scripts/generate';
import {
  BUNDLE_FILE,
  PUBLISHED_FILE,
  ROOT,
  TYPES_FILE,
  type OpenApiDoc,
  bundleSpec,
  lintSpec,
  renderTypes,
  serializeBundle,
} from './spec-tools';

async function readOrNull(rel: string): Promise<string | null> {
  const file = path.join(ROOT, rel);
  return existsSync(file) ? readFile(file, 'utf8') : null;
}

async function checkLint(): Promise<string[]> {
  const { errors, warnings, report } = await lintSpec();
  if (errors === 0 && warnings === 0) return [];
  return [`spec lint: ${errors} errors, ${warnings} warnings (npm run spec:lint)\n${report}`];
}

async function checkDrift(doc: OpenApiDoc): Promise<string[]> {
  const expected: [string, string][] = [
    [BUNDLE_FILE, serializeBundle(doc)],
    [TYPES_FILE, await renderTypes(doc)],
  ];
  const failures: string[] = [];
  for (const [file, text] of expected) {
    const actual = await readOrNull(file);
    if (actual !== text) {
      failures.push(`${file} is ${actual === null ? 'missing' : 'stale'}: run npm run generate and commit the result`);
    }
  }
  return failures;
}

/** packages/client's generated files are rendered from openapi/published.yaml, and it carries its version. */
async function checkClient(): Promise<string[]> {
  const { types, errors, version } = await renderClient();
  const failures: string[] = [];
  for (const [file, text] of [
    [CLIENT_OUTPUTS.types, types],
    [CLIENT_OUTPUTS.errors, errors],
  ] as const) {
    const actual = existsSync(file) ? await readFile(file, 'utf8') : null;
    if (actual !== text) {
      failures.push(`${path.relative(ROOT, file)} is ${actual === null ? 'missing' : 'stale'} against ${PUBLISHED_FILE}: run npm run spec:publish (or npm run generate in packages/client) and commit the result`);
    }
  }
  const own = await clientPackageVersion();
  if (own !== packageVersionFor(version)) failures.push(`packages/client/package.json version ${own} does not follow the contract's info.version ${version} (expected ${packageVersionFor(version)})`);
  return failures;
}

function formatPath(p: (string | number)[]): string {
  return p.map(String).join(' › ');
}

async function checkBreaking(doc: OpenApiDoc): Promise<string[]> {
  const text = await readOrNull(PUBLISHED_FILE);
  if (text === null) {
    return [`${PUBLISHED_FILE} does not exist: publish a baseline with npm run spec:publish`];
  }
  const published = parse(text) as OpenApiDoc;
  // Only changes reachable from paths matter to clients; api-smart-diff follows $refs into
  // components and reports them under the operation that uses them.
  const breaking = apiCompare(published, doc).diffs.filter(
    (d) => d.type === 'breaking' && d.path[0] === 'paths',
  );
  if (breaking.length === 0) return [];
  const lines = breaking.map(
    (d) => `  - ${d.action} ${formatPath(d.path)}${d.description ? `: ${d.description}` : ''}`,
  );
  return [
    `${breaking.length} breaking change(s) against ${PUBLISHED_FILE}:\n${lines.join('\n')}\n` +
      '  Make the change compatible, or, if the break is intended and agreed, run npm run spec:publish.',
  ];
}

async function main(): Promise<void> {
  const doc = await bundleSpec();
  const checks: [string, Promise<string[]>][] = [
    ['lint', checkLint()],
    ['generated drift', checkDrift(doc)],
    ['breaking changes', checkBreaking(doc)],
    ['client package', checkClient()],
  ];
  let failed = false;
  for (const [name, pending] of checks) {
    const failures = await pending;
    console.log(`${failures.length === 0 ? 'ok  ' : 'FAIL'} ${name}`);
    for (const f of failures) console.error(f);
    failed ||= failures.length > 0;
  }
  if (failed) process.exit(1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
