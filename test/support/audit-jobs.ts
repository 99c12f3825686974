import pino from 'pino';
import { SecretBox } from '../../src/lib/crypto';
import { createJobRunner, type JobRunner } from '../../src/jobs';
import { createOutbound, type Outbound } from '../../src/outbound';
import type { TestApp } from './app';

/**
 * A job runner taking the audit log's kinds only (checkpoints, and streams once they exist), on
 * the test app's database and clock: main.ts runs the same kinds with AUDIT_DISPATCH on.
 */
export function auditRunner(t: TestApp, outbound: Outbound = createOutbound({ allowedNetworks: t.settings.outboundAllowedNetworks })): JobRunner {
  return createJobRunner({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    outbound,
    settings: t.settings,
    kinds: { webhooks: false, mail: false, audit: true },
  });
}
