// The in-process bus: the default when no Redis is configured (a single node, or tests).
import { EventEmitter } from 'node:events';
import type { Logger } from '../logging/logger.ts';
import type { BusEvent, EventBus, SubscribeOptions, Subscription } from './bus.ts';
import { OrderedDelivery } from './ordered-delivery.ts';

export class MemoryBus implements EventBus {
  readonly kind = 'memory' as const;
  private readonly emitter = new EventEmitter();
  private closed = false;
  private readonly prefixed = new Set<{ prefix: string; onEvent: (event: BusEvent) => void }>();

  constructor(private readonly logger?: Logger) {
    // One listener per subscription on a stream; many subscribers on one stream are normal, not a leak.
    this.emitter.setMaxListeners(0);
  }

  async publish(event: BusEvent): Promise<void> {
    if (this.closed) return;
    this.emitter.emit(event.stream, event);
    for (const p of this.prefixed) {
      // Never inside publish(), and a copy each, as for subscribe().
      if (event.stream.startsWith(p.prefix)) queueMicrotask(() => this.prefixed.has(p) && p.onEvent(structuredClone(event)));
    }
  }

  async subscribePrefix(prefix: string, onEvent: (event: BusEvent) => void): Promise<Subscription> {
    const entry = { prefix, onEvent };
    this.prefixed.add(entry);
    return {
      close: async () => {
        this.prefixed.delete(entry);
      },
    };
  }

  async subscribe(stream: string, onEvent: (event: BusEvent) => void, options: SubscribeOptions = {}): Promise<Subscription> {
    const delivery = new OrderedDelivery(stream, onEvent, { ...options, logger: this.logger });
    // A copy per subscriber, as a network bus would give: no handler can change what another one (or the
    // publisher) sees.
    const listener = (event: BusEvent): void => delivery.push(structuredClone(event));
    this.emitter.on(stream, listener);
    const close = async (): Promise<void> => {
      delivery.close();
      this.emitter.off(stream, listener);
    };
    try {
      await delivery.start();
    } catch (err) {
      await close();
      throw err;
    }
    return { close };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emitter.removeAllListeners();
    this.prefixed.clear();
  }
}
