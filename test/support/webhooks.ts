import pino from 'pino';
import { SecretBox } from '../../src/lib/crypto';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher';
import type { TestApp } from './app';

/** A dispatcher on the test app's database and clock (the service process runs the same one from main.ts). */
export function testDispatcher(t: TestApp, fetchImpl: typeof fetch = globalThis.fetch): WebhookDispatcher {
  return new WebhookDispatcher({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    fetch: fetchImpl,
    settings: t.settings.webhooks,
  });
}

/** Test settings: the local receiver (127.0.0.1) is inside the allowed networks; attempts time out fast. */
export const WEBHOOK_TEST_ENV: Record<string, string> = {
  OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8',
  WEBHOOK_TIMEOUT_MS: '400',
};
