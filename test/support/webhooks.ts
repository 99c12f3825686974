import pino from 'pino';
import { SecretBox } from '../../src/lib/crypto';
import { createJobRunner, type JobRunner } from '../../src/jobs';
import { createOutbound, type Outbound } from '../../src/outbound';
import type { TestApp } from './app';

/** A job runner taking webhook deliveries only, on the test app's database and clock (the service process runs the same one from main.ts). */
export function testDispatcher(t: TestApp, outbound: Outbound = createOutbound({ allowedNetworks: t.settings.outboundAllowedNetworks })): JobRunner {
  return createJobRunner({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    outbound,
    settings: t.settings,
    kinds: { webhooks: true, mail: false },
  });
}

/** Test settings: the local receiver (127.0.0.1) is inside the allowed networks; attempts time out fast. */
export const WEBHOOK_TEST_ENV: Record<string, string> = {
  OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8',
  WEBHOOK_TIMEOUT_MS: '1000',
};
