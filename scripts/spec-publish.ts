// npm run spec:publish: freeze the current contract as openapi/published.yaml, the baseline
// that spec:check diffs against for breaking changes. Run it on purpose, when a contract ships.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { generateClient } from '../packages/client/scripts/generate';
import { PUBLISHED_FILE, ROOT, bundleSpec } from './spec-tools';

const HEADER = [
  '# The last published API contract (bundled from openapi/spec.yaml).',
  '# `npm run spec:check` fails on any breaking change from this file to the current spec.',
  '# Do not edit by hand: refresh it on purpose with `npm run spec:publish` when a contract ships.',
  '',
].join('\n');

async function main(): Promise<void> {
  const doc = await bundleSpec();
  // lineWidth 0: no folding, so diffs of this file stay line-per-value.
  await writeFile(path.join(ROOT, PUBLISHED_FILE), HEADER + stringify(doc, { lineWidth: 0 }));
  console.log(`wrote ${PUBLISHED_FILE}`);
  // The client package is built from the published contract: its types follow each publication.
  await generateClient();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
