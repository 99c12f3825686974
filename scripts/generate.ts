// npm run generate: openapi/spec.yaml → generated/openapi.json (served by the app) → generated/api.ts.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BUNDLE_FILE, ROOT, TYPES_FILE, bundleSpec, renderTypes, serializeBundle } from './spec-tools';

async function main(): Promise<void> {
  const doc = await bundleSpec();
  // Types are rendered from the same bundle the service serves, so they cannot disagree.
  const types = await renderTypes(doc);
  await mkdir(path.join(ROOT, 'generated'), { recursive: true });
  await writeFile(path.join(ROOT, BUNDLE_FILE), serializeBundle(doc));
  await writeFile(path.join(ROOT, TYPES_FILE), types);
  console.log(`wrote ${BUNDLE_FILE} and ${TYPES_FILE}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
