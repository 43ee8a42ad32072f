// The worker's side of membership (docs/CLUSTER.md "The worker"): attest → challenge → register → heartbeat every
// period with its load, token refreshed before it expires, commands in heartbeat responses obeyed (drain, undrain,
// shutdown, sync_config), and a fresh attestation whenever the controller refuses the session (its token expired or was
// superseded, it was deregistered, the controller lost its row). A controller that cannot be reached is retried
// without dropping the session, so a worker cut off the network rejoins on its own when the link returns.
// Several controllers (docs/CLUSTER.md "Several controllers"): the worker talks to one at a time; when it has been
// unreachable for `failoverAfterMs` (two heartbeat periods by default) the worker moves to the next in the list,
// keeping its node id, token and registration — they live in the shared database, so the next controller usually
// accepts them; if it refuses, the ordinary refusal path attests again there. It stays on the new controller until
// that one fails in turn (then the next, wrapping around): a recovered earlier controller does not pull it back,
// so a flapping controller cannot make the worker flap.
import { EventEmitter } from 'node:events';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from '../logging/logger.ts';
import { NodePeerStatus, NodeRole, type NodeCapabilityAdvertisement, type NodeCommand } from '../gen/orch/cluster/v1/cluster.js';
import { NodeClusterClient } from './client.ts';
import { configHash } from './membership.ts';
import type { NodeKey } from './node-key.ts';

export interface WorkerLoad {
  active_execution_count: number;
  cpu_utilization_percent: number;
  memory_utilization_percent: number;
  /** Event-loop delay, 99th percentile since the previous sample, ms (absent when not measured). */
  event_loop_delay_ms?: number;
}

export interface WorkerMembershipOptions {
  /** host:port of the controller's NodeClusterService, or several in order of preference. */
  controller: string | readonly string[];
  /** How long the current controller must stay unreachable before the next one is tried (default 2 heartbeats). */
  failoverAfterMs?: number;
  /** The deadline of each call to a controller (default: two heartbeat periods, within 2–10 s). */
  callTimeoutMs?: number;
  nodeId: string;
  role: 'worker' | 'hybrid';
  key: NodeKey;
  /** The cluster's join token, sent with every AttestNode (absent: the controller must list this node's key). */
  joinToken?: string;
  capabilities: () => NodeCapabilityAdvertisement;
  /** Where this node serves NodeClusterService (PushConfig, ForwardExecution). */
  grpcAddress: string;
  heartbeatMs: number;
  load: () => WorkerLoad;
  /** Applies managed config sections; answers a rejection reason or undefined when applied. */
  applyConfig?: (yaml: string, hash: string) => Promise<string | undefined>;
  /** Called after a shutdown command was obeyed (deregistered); the node stops the process. */
  onShutdown?: (reason: string) => void;
  /** Refresh the token when less than this is left (default: a fifth of its lifetime, at least 2 heartbeats). */
  refreshBeforeMs?: number;
  logger: Logger;
}

export type MembershipState = 'joining' | 'member' | 'stopped';

/**
 * Events: `joined` (peerId), `heartbeat` (commands), `drain` (DrainCommand), `undrain` (UndrainCommand), `drained`
 * (no execution left while draining), `config` (hash applied), `shutdown` (reason), `refused` (error message; a new attestation follows),
 * `failover` (from, to: the controller addresses).
 */
export class WorkerMembership extends EventEmitter {
  private readonly clients: NodeClusterClient[];
  private current = 0;
  /** When the first of the current run of failed calls to the current controller started; undefined when fine. */
  private unreachableSince: number | undefined;
  private readonly log: Logger;
  private token: string | undefined;
  private tokenExpiresAt = 0;
  private tokenIssuedAt = 0;
  private peerId: string | undefined;
  private draining = false;
  /** A graceful shutdown drains too; an undrain command does not end that drain. */
  private shuttingDown = false;
  private reportedDrained = false;
  private appliedHash: string | undefined;
  private heartbeatMs: number;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  state: MembershipState = 'joining';
  heartbeats = 0;
  failovers = 0;

  constructor(private readonly o: WorkerMembershipOptions) {
    super();
    const addresses = typeof o.controller === 'string' ? [o.controller] : [...o.controller];
    if (addresses.length === 0) throw new Error('WorkerMembership needs at least one controller address');
    const timeoutMs = o.callTimeoutMs ?? Math.max(2000, Math.min(10_000, o.heartbeatMs * 2));
    this.clients = addresses.map((a) => new NodeClusterClient(a, timeoutMs));
    this.log = o.logger.child({ component: 'membership-client' });
    this.heartbeatMs = o.heartbeatMs;
  }

  private get client(): NodeClusterClient {
    return this.clients[this.current]!;
  }

  /** The controller this worker talks to now. */
  get controller(): string {
    return this.client.address;
  }

  get peer(): string | undefined {
    return this.peerId;
  }

  isDraining(): boolean {
    return this.draining;
  }

  /** Starts the loop; resolves at once (joining goes on in the background, see `joined`). */
  start(): this {
    this.loop = this.run();
    return this;
  }

  private creds(): { token: string; key: NodeKey } {
    if (!this.token) throw new Error('not attested');
    return { token: this.token, key: this.o.key };
  }

  private async attest(client: NodeClusterClient): Promise<void> {
    const a = await client.attest({ node_id: this.o.nodeId, public_key_pem: this.o.key.publicKeyPem, role: this.o.role === 'hybrid' ? NodeRole.HYBRID : NodeRole.WORKER }, this.o.joinToken);
    const c = await client.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(this.o.key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
    this.token = c.node_security_token;
    this.tokenIssuedAt = Date.now();
    this.tokenExpiresAt = Date.parse(c.expires_at);
  }

  private async join(client: NodeClusterClient): Promise<void> {
    this.state = 'joining';
    await this.attest(client);
    const r = await client.register({ capabilities: this.o.capabilities(), grpc_address: this.o.grpcAddress }, this.creds());
    this.peerId = r.peer_id;
    this.state = 'member';
    this.log.info({ peer_id: r.peer_id, controller: client.address }, 'joined the cluster');
    this.emit('joined', r.peer_id);
  }

  private refreshDue(): boolean {
    const lifetime = this.tokenExpiresAt - this.tokenIssuedAt;
    const before = this.o.refreshBeforeMs ?? Math.max(lifetime / 5, 2 * this.heartbeatMs);
    return Date.now() >= this.tokenExpiresAt - before;
  }

  private async beat(): Promise<void> {
    // One controller for the whole round, even if a failover is decided meanwhile.
    const client = this.client;
    if (!this.peerId || !this.token) await this.join(client);
    else if (this.refreshDue()) {
      // A new session for the same registration: ChallengeNode moves the member's row to the new token.
      await this.attest(client);
      this.log.debug('node token refreshed');
    }
    const load = this.o.load();
    const res = await client.heartbeat(
      {
        peer_id: this.peerId ?? '',
        active_execution_count: load.active_execution_count,
        cpu_utilization_percent: load.cpu_utilization_percent,
        memory_utilization_percent: load.memory_utilization_percent,
        status: this.draining ? NodePeerStatus.DRAINING : NodePeerStatus.ACTIVE,
        ...(load.event_loop_delay_ms !== undefined ? { event_loop_delay_ms: load.event_loop_delay_ms } : {}),
      },
      this.creds(),
    );
    this.heartbeats++;
    this.emit('heartbeat', res.commands);
    for (const cmd of res.commands) await this.obey(cmd);
    if (this.draining && load.active_execution_count === 0 && !this.reportedDrained) {
      this.reportedDrained = true;
      this.log.info('drained: no execution left');
      this.emit('drained');
    }
  }

  private async obey(cmd: NodeCommand): Promise<void> {
    const c = cmd.command;
    if (!c) return;
    switch (c.$case) {
      case 'drain':
        if (!this.draining) this.log.info({ reason: c.value.reason }, 'drain command: taking no new executions');
        this.draining = true;
        this.emit('drain', c.value);
        return;
      case 'undrain':
        if (this.shuttingDown || !this.draining) return;
        this.log.info({ reason: c.value.reason }, 'undrain command: taking new executions again');
        this.draining = false;
        this.reportedDrained = false;
        this.emit('undrain', c.value);
        return;
      case 'sync_config':
        await this.syncConfig(c.value.config_hash);
        return;
      case 'shutdown':
        await this.shutdown(c.value.reason, c.value.graceful, c.value.grace_period_seconds);
        return;
    }
  }

  /** SyncConfig unless `hash` is already applied; checks the SHA-256 of what it got before applying it. */
  async syncConfig(hash?: string): Promise<void> {
    if (hash !== undefined && hash === this.appliedHash) return;
    const cfg = await this.client.syncConfig(this.creds());
    if (configHash(cfg.config_yaml) !== cfg.config_hash) {
      this.log.warn('SyncConfig answer does not match its hash; not applied');
      return;
    }
    if (cfg.config_hash === this.appliedHash) return;
    const reason = this.o.applyConfig ? await this.o.applyConfig(cfg.config_yaml, cfg.config_hash) : undefined;
    if (reason !== undefined) {
      this.log.warn({ reason }, 'managed config refused');
      return;
    }
    this.appliedHash = cfg.config_hash;
    this.log.info({ hash: cfg.config_hash }, 'managed config applied');
    this.emit('config', cfg.config_hash);
  }

  /** Records a hash applied by PushConfig, so a later sync_config command for it is a no-op. */
  markApplied(hash: string): void {
    this.appliedHash = hash;
  }

  /** Changes the heartbeat period (a managed `cluster.heartbeat_interval_seconds`). */
  setHeartbeatMs(ms: number): void {
    this.heartbeatMs = ms;
  }

  private async shutdown(reason: string, graceful: boolean, graceS?: number): Promise<void> {
    this.log.info({ reason, graceful }, 'shutdown command');
    this.shuttingDown = true;
    if (graceful) {
      this.draining = true;
      const deadline = graceS === undefined ? Infinity : Date.now() + graceS * 1000;
      while (this.o.load().active_execution_count > 0 && Date.now() < deadline && !this.stopped) await this.sleep(Math.min(this.heartbeatMs, 500));
    }
    await this.stop('shutdown');
    this.emit('shutdown', reason);
    this.o.onShutdown?.(reason);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
      this.timer.unref();
    });
  }

  /**
   * After a failed call that did not reach a verdict from the controller: moves to the next controller once the
   * current one has been unreachable for the failover bound. Answers whether it moved.
   */
  private maybeFailOver(attemptStartedAt: number): boolean {
    this.unreachableSince ??= attemptStartedAt;
    const bound = this.o.failoverAfterMs ?? 2 * this.heartbeatMs;
    const down = Date.now() - this.unreachableSince;
    if (this.clients.length < 2 || down < bound) return false;
    const from = this.client.address;
    this.current = (this.current + 1) % this.clients.length;
    this.unreachableSince = undefined;
    this.failovers++;
    this.log.warn({ from, to: this.client.address, unreachable_ms: down }, 'controller unreachable; moving to the next controller');
    this.emit('failover', from, this.client.address);
    return true;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let delay = this.heartbeatMs;
      const startedAt = Date.now();
      try {
        await this.beat();
        this.unreachableSince = undefined;
      } catch (err) {
        if (this.stopped) break;
        const code = (err as ServiceError).code;
        const refused = code === GrpcStatus.UNAUTHENTICATED || code === GrpcStatus.NOT_FOUND || code === GrpcStatus.PERMISSION_DENIED;
        if (refused) {
          // The controller answered (it is reachable) but does not accept this session: attest and register again.
          this.unreachableSince = undefined;
          this.log.warn({ code, err: (err as Error).message, controller: this.client.address }, 'session refused; attesting again');
          this.token = undefined;
          this.peerId = undefined;
          this.state = 'joining';
          this.emit('refused', (err as Error).message);
          // Joining (or rejoining) retries sooner than a long heartbeat period.
          delay = Math.min(this.heartbeatMs, 1000);
        } else {
          this.log.warn({ code, err: (err as Error).message, controller: this.client.address }, 'controller unreachable; retrying');
          // The next controller is tried at once: the worker has already been silent for the failover bound.
          delay = this.maybeFailOver(startedAt) ? 0 : Math.min(this.heartbeatMs, 1000);
        }
      }
      if (this.stopped) break;
      await this.sleep(delay);
    }
  }

  /** Stops the loop and leaves the cluster (DeregisterNode) when `deregister` is set and it is a member. */
  async stop(reason = 'stopping', deregister = true): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    const peer = this.peerId;
    if (deregister && peer && this.token) {
      await this.client.deregister({ peer_id: peer, reason }, this.creds()).catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'DeregisterNode failed'));
    }
    this.state = 'stopped';
    for (const c of this.clients) c.close();
  }

  /** Waits for the loop to end (after stop). */
  async done(): Promise<void> {
    await this.loop;
  }
}
