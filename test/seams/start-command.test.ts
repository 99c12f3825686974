import { readFileSync } from 'node:fs';
import path from 'node:path';
import { shippedNodeFlags } from '../../bench/lib/context';

/**
 * The service ships with node flags (docs/settings.md "How the service is started": V8's old-space growth, issue #20). `npm start`
 * holds them, the bench reads them from there, and the Dockerfile's CMD must start the same
 * command: a flag changed in one place only would make the benchmark measure another process
 * than the one that runs in production.
 */
const ROOT = path.resolve(__dirname, '..', '..');

test('the Dockerfile starts the service with the same command as npm start (which the bench runs)', () => {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
  expect(cmd).toBeDefined();
  expect(JSON.parse(cmd!)).toEqual(start.trim().split(/\s+/));
  expect(shippedNodeFlags()).toEqual(start.trim().split(/\s+/).slice(1, -1));
});
