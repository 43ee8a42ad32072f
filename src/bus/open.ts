// Opens the node's event bus: Redis when a URL is configured, otherwise the in-process bus.
import type { Logger } from '../logging/logger.ts';
import type { EventBus } from './bus.ts';
import { MemoryBus } from './memory.ts';
import { RedisBus } from './redis.ts';

export interface OpenBusOptions {
  /** redis://… Absent: the in-process bus (one node only). */
  url?: string | undefined;
  channelPrefix?: string;
}

export async function openBus(options: OpenBusOptions, logger: Logger): Promise<EventBus> {
  const log = logger.child({ component: 'bus' });
  if (!options.url) return new MemoryBus(log);
  return RedisBus.open(options.url, {
    logger: log,
    ...(options.channelPrefix === undefined ? {} : { channelPrefix: options.channelPrefix }),
  });
}
