// The chaos suite's cluster: real `orch up` processes on a PRIVATE PostgreSQL and Redis (test/support/
// private-services.ts; never the shared servers on 5432/6379), each node on fixed ports so that a node killed and
// started again is found where it was (a worker's controller list names them). A node can be killed (SIGKILL),
// started again on the same data directory, frozen (SIGSTOP) and thawed.
import { writeFile, appendFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../test/support/private-services.ts';
import { startOrchNode, type NodeProcess } from '../../test/support/node-process.ts';

export type Topology = 'split' | 'hybrid';

export interface NodeSpec {
  id: string;
  role: 'controller' | 'worker' | 'hybrid';
  http: number;
  grpc: number;
  cluster: number;
}

export interface ChaosNode {
  spec: NodeSpec;
  process: NodeProcess | undefined;
  state: 'up' | 'down' | 'frozen' | 'starting';
  /** Pid of each incarnation, for the logs. */
  starts: number;
}

export interface ClusterOptions {
  dir: string;
  databaseUrl: string;
  redisUrl: string;
  /** NodeConfig lines every node gets (auth, model provider, stimuli routes). */
  specTail: string;
  /** Environment of every node (webhook secret). */
  env: Record<string, string>;
}

/** Controllers (or hybrids) take the load; workers run the executions of the split topology. */
export function isFrontDoor(n: ChaosNode): boolean {
  return n.spec.role !== 'worker';
}

export class ChaosCluster {
  readonly nodes: ChaosNode[] = [];

  constructor(private readonly o: ClusterOptions) {}

  static async plan(topology: Topology, suffix: string): Promise<NodeSpec[]> {
    const ids: [string, NodeSpec['role']][] =
      topology === 'split'
        ? [[`ctl-a-${suffix}`, 'controller'], [`ctl-b-${suffix}`, 'controller'], [`wrk-a-${suffix}`, 'worker'], [`wrk-b-${suffix}`, 'worker']]
        : [[`hyb-a-${suffix}`, 'hybrid'], [`hyb-b-${suffix}`, 'hybrid']];
    const specs: NodeSpec[] = [];
    for (const [id, role] of ids) specs.push({ id, role, http: await freePort(), grpc: await freePort(), cluster: await freePort() });
    return specs;
  }

  private config(spec: NodeSpec, all: NodeSpec[]): string {
    const controllers = all.filter((s) => s.role === 'controller').map((s) => `"127.0.0.1:${s.cluster}"`);
    const cluster = [
      'heartbeat_interval_seconds: 1',
      'missed_heartbeats: 3',
      'execution_lease_seconds: 6',
      'worker_wait_seconds: 120',
      ...(spec.role === 'worker' ? [`controller: [${controllers.join(', ')}]`] : []),
    ];
    return `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${spec.id} }
spec:
  node: { id: ${spec.id}, role: ${spec.role} }
  http: { bind: 127.0.0.1, port: ${spec.http} }
  grpc: { port: ${spec.grpc} }
  cluster: { cluster_grpc_port: ${spec.cluster}, ${cluster.join(', ')} }
  runtime: { default_isolation: process }
${this.o.specTail}`;
  }

  async startAll(specs: NodeSpec[]): Promise<void> {
    for (const spec of specs) {
      await writeFile(path.join(this.o.dir, `${spec.id}.yaml`), this.config(spec, specs));
      this.nodes.push({ spec, process: undefined, state: 'down', starts: 0 });
    }
    // Controllers first: the workers join them.
    await Promise.all(this.nodes.filter(isFrontDoor).map((n) => this.start(n)));
    await Promise.all(this.nodes.filter((n) => !isFrontDoor(n)).map((n) => this.start(n)));
  }

  async start(n: ChaosNode): Promise<void> {
    n.state = 'starting';
    const spec = n.spec;
    const proc = await startOrchNode(
      {
      ORCH_CONFIG: path.join(this.o.dir, `${spec.id}.yaml`),
      ORCH_DATA_DIR: path.join(this.o.dir, spec.id),
      DATABASE_URL: this.o.databaseUrl,
      REDIS_URL: this.o.redisUrl,
      ORCH_HTTP_PORT: String(spec.http),
      ORCH_GRPC_PORT: String(spec.grpc),
      ORCH_CLUSTER_GRPC_PORT: String(spec.cluster),
      ORCH_LOG_LEVEL: 'warn',
      ...this.o.env,
      },
    ).catch((err: unknown) => {
      // Down again (a start during the database outage may exit): the caller tries again later.
      n.state = 'down';
      throw err;
    });
    n.starts++;
    n.process = proc;
    n.state = 'up';
  }

  /** SIGKILL; the node's log so far is kept in the run's directory. */
  async kill(n: ChaosNode): Promise<void> {
    const p = n.process;
    if (!p) return;
    if (n.state === 'frozen') p.child.kill('SIGCONT');
    p.child.kill('SIGKILL');
    await p.exited;
    await this.saveLog(n);
    n.process = undefined;
    n.state = 'down';
  }

  freeze(n: ChaosNode): void {
    n.process?.child.kill('SIGSTOP');
    n.state = 'frozen';
  }

  thaw(n: ChaosNode): void {
    n.process?.child.kill('SIGCONT');
    n.state = 'up';
  }

  async saveLog(n: ChaosNode): Promise<void> {
    if (n.process) await appendFile(path.join(this.o.dir, `${n.spec.id}.log`), n.process.stderr()).catch(() => undefined);
  }

  /** Every node up (thawed, started again); used before the settle phase. */
  async healAll(): Promise<void> {
    for (const n of this.nodes) if (n.state === 'frozen') this.thaw(n);
    await Promise.all(this.nodes.filter((n) => n.state === 'down').map((n) => this.start(n)));
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        const p = n.process;
        if (!p) return;
        p.child.kill('SIGCONT');
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
        await p.exited;
        clearTimeout(timer);
        await this.saveLog(n);
        n.process = undefined;
        n.state = 'down';
      }),
    );
  }

  /** A front door that is up, chosen by `pick` (the seeded random source). */
  frontDoor(pick: (n: number) => number): ChaosNode | undefined {
    const up = this.nodes.filter((n) => isFrontDoor(n) && n.state === 'up');
    return up.length > 0 ? up[pick(up.length)] : undefined;
  }
}
