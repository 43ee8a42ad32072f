// Redis for tests: the server at REDIS_URL (or the local default), and channel prefixes no other test shares.
import { randomBytes } from 'node:crypto';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function redisUrl(): string {
  return process.env.REDIS_URL || DEFAULT_REDIS_URL;
}

/** A channel prefix unique to the caller, so parallel test processes never hear each other. */
export function randomChannelPrefix(label = 'test'): string {
  return `orch-test:${label}:${randomBytes(6).toString('hex')}:`;
}
