// The Redis bus: fan-out between nodes over pub/sub. One connection publishes; one, in subscriber mode, carries
// every channel this bus listens to (a connection in subscriber mode can do nothing else). Redis pub/sub is
// fire-and-forget: messages sent while a subscriber is disconnected are lost, which OrderedDelivery repairs from
// history when the next event shows the gap.
import { trackRedis } from '../observability/clients.ts';
import { Redis } from 'ioredis';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { BusEvent, EventBus, SubscribeOptions, Subscription } from './bus.ts';
import { OrderedDelivery } from './ordered-delivery.ts';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.ts';

/**
 * Reconnects: 50 ms doubling up to 2 s, with jitter. Commands wait in the offline queue meanwhile
 * (maxRetriesPerRequest: null), so an outage delays a publish or a SUBSCRIBE instead of failing it (issue 20: a
 * restart of Redis killed a worker through a rejected SUBSCRIBE nobody caught).
 */
const RECONNECT_BACKOFF: BackoffPolicy = { baseMs: 50, capMs: 2_000 };

export const DEFAULT_CHANNEL_PREFIX = 'orch:events:';

export interface RedisBusOptions {
  /** Prepended to the stream name to make the channel name. Default `orch:events:`. */
  channelPrefix?: string;
  logger?: Logger;
}

interface Channel {
  deliveries: Set<OrderedDelivery>;
  /** Resolves once Redis has confirmed the SUBSCRIBE; history must not be read before that. */
  ready: Promise<unknown>;
}

export class RedisBus implements EventBus {
  readonly kind = 'redis' as const;
  private readonly channels = new Map<string, Channel>();
  /** PSUBSCRIBE patterns (prefix + '*') and their listeners. */
  private readonly patterns = new Map<string, { listeners: Set<(event: BusEvent) => void>; ready: Promise<unknown> }>();
  private readonly prefix: string;

  private constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly logger: Logger | undefined,
    prefix: string,
  ) {
    this.prefix = prefix;
    sub.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    sub.on('pmessage', (pattern: string, _channel: string, message: string) => this.onPatternMessage(pattern, message));
    // ioredis re-subscribes by itself on reconnect, but what was published while the connection was down is gone:
    // once the channels are confirmed again, each ordered subscription reads the missed range from history.
    let wasDown = false;
    sub.on('close', () => {
      wasDown = true;
    });
    sub.on('ready', () => {
      if (!wasDown) return;
      wasDown = false;
      void this.resubscribed().catch((err: unknown) => this.logger?.warn({ err }, 'resync after Redis reconnect failed'));
    });
  }

  /** True while both connections are up (readiness). */
  isConnected(): boolean {
    return this.pub.status === 'ready' && this.sub.status === 'ready';
  }

  private async resubscribed(): Promise<void> {
    const names = [...this.channels.keys()];
    // A SUBSCRIBE answered means Redis delivers from here on; only then is history read, so nothing falls between.
    if (names.length > 0) await this.sub.subscribe(...names);
    this.logger?.info({ channels: names.length }, 'Redis reconnected; resyncing subscriptions from history');
    for (const channel of this.channels.values()) for (const d of channel.deliveries) d.resync();
  }

  /** Connects both connections; fails with UNAVAILABLE when Redis does not answer. */
  static async open(url: string, options: RedisBusOptions = {}): Promise<RedisBus> {
    const log = options.logger;
    const untrack: Array<() => void> = [];
    const make = (role: string): Redis => {
      const r = new Redis(url, {
        lazyConnect: true,
        maxRetriesPerRequest: null,
        retryStrategy: (times: number) => backoffDelay(times, RECONNECT_BACKOFF),
      });
      // Without a listener ioredis prints connection errors itself; they belong in our log.
      r.on('error', (err: Error) => log?.warn({ err, role }, 'redis connection error'));
      untrack.push(trackRedis(r, `bus-${role}`));
      return r;
    };
    const pub = make('publisher');
    const sub = make('subscriber');
    try {
      await Promise.all([pub.connect(), sub.connect()]);
    } catch (err) {
      pub.disconnect();
      sub.disconnect();
      for (const u of untrack) u();
      throw new OrchError(Errors.UNAVAILABLE, `cannot connect to Redis: ${(err as Error).message}`, { cause: err });
    }
    const bus = new RedisBus(pub, sub, log, options.channelPrefix ?? DEFAULT_CHANNEL_PREFIX);
    bus.untrack = () => untrack.forEach((u) => u());
    return bus;
  }

  async publish(event: BusEvent): Promise<void> {
    const sent = this.pub.publish(this.prefix + event.stream, JSON.stringify(event));
    if (this.pub.status === 'ready') {
      await sent;
      return;
    }
    // Redis is down: the PUBLISH waits in the offline queue and goes out, in order, once Redis is back. The caller
    // (an actor's step, a start) does not wait for that: pub/sub promises no delivery anyway, and subscribers read
    // what they missed from history when they reconnect. Waiting would stall every actor and hang every start.
    sent.catch((err: unknown) => this.logger?.warn({ err, stream: event.stream }, 'publish queued during a Redis outage failed'));
  }

  async subscribe(stream: string, onEvent: (event: BusEvent) => void, options: SubscribeOptions = {}): Promise<Subscription> {
    const name = this.prefix + stream;
    const delivery = new OrderedDelivery(stream, onEvent, { ...options, logger: this.logger });
    let channel = this.channels.get(name);
    if (!channel) {
      channel = { deliveries: new Set(), ready: this.sub.subscribe(name) };
      this.channels.set(name, channel);
    }
    channel.deliveries.add(delivery);
    const close = async (): Promise<void> => {
      delivery.close();
      const current = this.channels.get(name);
      if (!current?.deliveries.delete(delivery) || current.deliveries.size > 0) return;
      this.channels.delete(name);
      await this.sub.unsubscribe(name).catch((err: unknown) => this.logger?.warn({ err, name }, 'unsubscribe failed'));
    };
    try {
      await channel.ready;
      await delivery.start();
    } catch (err) {
      await close();
      throw err;
    }
    return { close };
  }

  async subscribePrefix(prefix: string, onEvent: (event: BusEvent) => void): Promise<Subscription> {
    // Glob characters in a prefix would widen the pattern; stream prefixes are plain words and a colon.
    if (/[*?[\]\\]/.test(prefix)) throw new OrchError(Errors.BAD_REQUEST, `invalid stream prefix: ${prefix}`);
    const pattern = `${this.prefix}${prefix}*`;
    let entry = this.patterns.get(pattern);
    if (!entry) {
      entry = { listeners: new Set(), ready: this.sub.psubscribe(pattern) };
      this.patterns.set(pattern, entry);
    }
    const listener = (event: BusEvent): void => onEvent(event);
    entry.listeners.add(listener);
    const close = async (): Promise<void> => {
      const current = this.patterns.get(pattern);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.patterns.delete(pattern);
      await this.sub.punsubscribe(pattern).catch((err: unknown) => this.logger?.warn({ err, pattern }, 'punsubscribe failed'));
    };
    try {
      await entry.ready;
    } catch (err) {
      await close();
      throw err;
    }
    return { close };
  }

  private onPatternMessage(pattern: string, message: string): void {
    const entry = this.patterns.get(pattern);
    if (!entry) return;
    const event = this.parse(pattern, message);
    if (!event) return;
    for (const listener of entry.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.logger?.error({ err, pattern }, 'prefix listener threw');
      }
    }
  }

  private parse(channel: string, message: string): BusEvent | undefined {
    let event: BusEvent;
    try {
      event = JSON.parse(message) as BusEvent;
    } catch (err) {
      this.logger?.warn({ err, channel }, 'dropping a message that is not JSON');
      return undefined;
    }
    if (typeof event?.seq !== 'number' || typeof event.stream !== 'string') {
      this.logger?.warn({ channel }, 'dropping a message that is not a BusEvent');
      return undefined;
    }
    return event;
  }

  private onMessage(channel: string, message: string): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    const event = this.parse(channel, message);
    if (!event) return;
    for (const delivery of entry.deliveries) delivery.push(event);
  }

  /** Stops the connections' metrics (src/observability/clients.ts). */
  untrack: () => void = () => undefined;

  async close(): Promise<void> {
    this.untrack();
    for (const channel of this.channels.values()) for (const d of channel.deliveries) d.close();
    this.channels.clear();
    this.patterns.clear();
    // QUIT would wait in the offline queue while Redis is down; a connection that is not up is just dropped.
    await Promise.all(
      [this.pub, this.sub].map(async (r) => {
        if (r.status === 'ready') await r.quit().catch(() => undefined);
        else r.disconnect();
      }),
    );
  }
}
