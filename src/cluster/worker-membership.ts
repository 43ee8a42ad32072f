// The worker's side of membership (docs/CLUSTER.md "The worker"): attest → challenge → register → heartbeat every
// period with its load, token refreshed before it expires, commands in heartbeat responses obeyed (drain, shutdown,
// sync_config), and a fresh attestation whenever the controller refuses the session (its token expired or was
// superseded, it was deregistered, the controller lost its row). A controller that cannot be reached is retried
// without dropping the session, so a worker cut off the network rejoins on its own when the link returns.
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
}

export interface WorkerMembershipOptions {
  /** host:port of the controller's NodeClusterService. */
  controller: string;
  nodeId: string;
  role: 'worker' | 'hybrid';
  key: NodeKey;
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
 * Events: `joined` (peerId), `heartbeat` (commands), `drain` (DrainCommand), `drained` (no execution left while
 * draining), `config` (hash applied), `shutdown` (reason), `refused` (error message; a new attestation follows).
 */
export class WorkerMembership extends EventEmitter {
  private readonly client: NodeClusterClient;
  private readonly log: Logger;
  private token: string | undefined;
  private tokenExpiresAt = 0;
  private tokenIssuedAt = 0;
  private peerId: string | undefined;
  private draining = false;
  private reportedDrained = false;
  private appliedHash: string | undefined;
  private heartbeatMs: number;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  state: MembershipState = 'joining';
  heartbeats = 0;

  constructor(private readonly o: WorkerMembershipOptions) {
    super();
    this.client = new NodeClusterClient(o.controller, Math.max(2000, Math.min(10_000, o.heartbeatMs * 2)));
    this.log = o.logger.child({ component: 'membership-client', controller: o.controller });
    this.heartbeatMs = o.heartbeatMs;
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

  private async attest(): Promise<void> {
    const a = await this.client.attest({ node_id: this.o.nodeId, public_key_pem: this.o.key.publicKeyPem, role: this.o.role === 'hybrid' ? NodeRole.HYBRID : NodeRole.WORKER });
    const c = await this.client.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(this.o.key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
    this.token = c.node_security_token;
    this.tokenIssuedAt = Date.now();
    this.tokenExpiresAt = Date.parse(c.expires_at);
  }

  private async join(): Promise<void> {
    this.state = 'joining';
    await this.attest();
    const r = await this.client.register({ capabilities: this.o.capabilities(), grpc_address: this.o.grpcAddress }, this.creds());
    this.peerId = r.peer_id;
    this.state = 'member';
    this.log.info({ peer_id: r.peer_id }, 'joined the cluster');
    this.emit('joined', r.peer_id);
  }

  private refreshDue(): boolean {
    const lifetime = this.tokenExpiresAt - this.tokenIssuedAt;
    const before = this.o.refreshBeforeMs ?? Math.max(lifetime / 5, 2 * this.heartbeatMs);
    return Date.now() >= this.tokenExpiresAt - before;
  }

  private async beat(): Promise<void> {
    if (!this.peerId || !this.token) await this.join();
    else if (this.refreshDue()) {
      // A new session for the same registration: ChallengeNode moves the member's row to the new token.
      await this.attest();
      this.log.debug('node token refreshed');
    }
    const load = this.o.load();
    const res = await this.client.heartbeat(
      {
        peer_id: this.peerId ?? '',
        active_execution_count: load.active_execution_count,
        cpu_utilization_percent: load.cpu_utilization_percent,
        memory_utilization_percent: load.memory_utilization_percent,
        status: this.draining ? NodePeerStatus.DRAINING : NodePeerStatus.ACTIVE,
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

  private async run(): Promise<void> {
    while (!this.stopped) {
      let delay = this.heartbeatMs;
      try {
        await this.beat();
      } catch (err) {
        if (this.stopped) break;
        const code = (err as ServiceError).code;
        const refused = code === GrpcStatus.UNAUTHENTICATED || code === GrpcStatus.NOT_FOUND || code === GrpcStatus.PERMISSION_DENIED;
        if (refused) {
          // The controller does not accept this session: attest and register again.
          this.log.warn({ code, err: (err as Error).message }, 'session refused; attesting again');
          this.token = undefined;
          this.peerId = undefined;
          this.state = 'joining';
          this.emit('refused', (err as Error).message);
        } else {
          this.log.warn({ code, err: (err as Error).message }, 'controller unreachable; retrying');
        }
        // Joining (or rejoining) retries sooner than a long heartbeat period.
        delay = Math.min(this.heartbeatMs, 1000);
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
    this.client.close();
  }

  /** Waits for the loop to end (after stop). */
  async done(): Promise<void> {
    await this.loop;
  }
}
