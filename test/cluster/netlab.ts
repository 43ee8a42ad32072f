// A small network lab for the cluster tests, made of real kernel parts: a Linux bridge in the host namespace with
// the address <subnet>.1, and one network namespace per node joined to it by a veth pair (<subnet>.N). Each run
// picks a random private /24 (10.200–254.x.0/24) that no existing route covers and random interface and namespace
// names, so runs on one machine do not collide. `cut` sets the bridge port of a node down: its frames go nowhere
// (the namespace side loses its carrier), which is a network cut, not a stopped process. Needs root (CAP_NET_ADMIN)
// and `ip` (iproute2); `probeNetns` says whether this machine allows it.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import net from 'node:net';
import { promisify } from 'node:util';
import { relayTo, splitHostPort } from '../support/tcp-relay.ts';

const run = promisify(execFile);

async function ip(...args: string[]): Promise<string> {
  const { stdout } = await run('ip', args, { timeout: 30_000 });
  return stdout;
}

/**
 * Undefined when network namespaces, veth pairs and bridges can be made here, else why not. Synchronous, because a
 * test file declares its tests synchronously and which test it declares depends on the answer.
 */
export function probeNetns(): string | undefined {
  const tag = randomBytes(3).toString('hex');
  const ns = `orch-probe-${tag}`;
  const veth = `opr${tag}`;
  const ipSync = (...args: string[]): void => {
    execFileSync('ip', args, { timeout: 30_000, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const why = (err: unknown): string => (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
  try {
    ipSync('netns', 'add', ns);
  } catch (err) {
    return `ip netns add failed: ${why(err)}`;
  }
  try {
    ipSync('link', 'add', veth, 'type', 'veth', 'peer', 'name', `${veth}n`, 'netns', ns);
    ipSync('link', 'del', veth);
    ipSync('link', 'add', `${veth}b`, 'type', 'bridge');
    ipSync('link', 'del', `${veth}b`);
    return undefined;
  } catch (err) {
    return `a veth pair or a bridge cannot be made: ${why(err)}`;
  } finally {
    try {
      ipSync('netns', 'del', ns);
    } catch {
      // best effort: the probe namespace holds nothing
    }
  }
}

export interface LabNode {
  /** Network namespace name (for `ip netns exec`). */
  ns: string;
  /** The node's address inside its namespace. */
  address: string;
  /** The host-side end of its veth pair, a bridge port. */
  hostVeth: string;
  /** Command prefix that runs a program inside the namespace. */
  exec: string[];
}

export interface NetLab {
  /** The bridge's address in the host namespace (the gateway every node reaches). */
  hostAddress: string;
  subnet: string;
  addNode(): Promise<LabNode>;
  /** Cuts the node off the network (its bridge port down). */
  cut(node: LabNode): Promise<void>;
  restore(node: LabNode): Promise<void>;
  /**
   * A TCP forwarder in this process listening on hostAddress:<ephemeral> to `target` (host:port), so that nodes in
   * namespaces reach services that listen on the host's loopback only (PostgreSQL, a test's model server).
   */
  forward(target: string): Promise<string>;
  destroy(): Promise<void>;
}

async function freeSubnet(): Promise<string> {
  const routes = await ip('-4', 'route', 'show', 'table', 'all');
  for (let i = 0; i < 50; i++) {
    const subnet = `10.${randomInt(200, 255)}.${randomInt(0, 256)}`;
    if (!routes.includes(`${subnet}.`)) return subnet;
  }
  throw new Error('no free 10.2xx.x.0/24 subnet found');
}

export async function createNetLab(): Promise<NetLab> {
  const tag = randomBytes(3).toString('hex');
  const bridge = `obr${tag}`;
  const subnet = await freeSubnet();
  const hostAddress = `${subnet}.1`;
  const nodes: LabNode[] = [];
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  // Made before anything else, so destroy() removes whatever part of the lab exists.
  await ip('link', 'add', bridge, 'type', 'bridge', 'forward_delay', '0');
  await ip('addr', 'add', `${hostAddress}/24`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');

  return {
    hostAddress,
    subnet,
    async addNode() {
      const n = nodes.length + 2;
      const node: LabNode = {
        ns: `orch-${tag}-n${n}`,
        address: `${subnet}.${n}`,
        hostVeth: `ov${tag}n${n}`,
        exec: [],
      };
      node.exec = ['ip', 'netns', 'exec', node.ns];
      nodes.push(node);
      const inner = `${node.hostVeth}i`;
      await ip('netns', 'add', node.ns);
      await ip('link', 'add', node.hostVeth, 'type', 'veth', 'peer', 'name', inner, 'netns', node.ns);
      await ip('link', 'set', node.hostVeth, 'master', bridge);
      await ip('link', 'set', node.hostVeth, 'up');
      await ip('-n', node.ns, 'addr', 'add', `${node.address}/24`, 'dev', inner);
      await ip('-n', node.ns, 'link', 'set', inner, 'up');
      await ip('-n', node.ns, 'link', 'set', 'lo', 'up');
      return node;
    },
    async cut(node) {
      await ip('link', 'set', node.hostVeth, 'down');
    },
    async restore(node) {
      await ip('link', 'set', node.hostVeth, 'up');
    },
    async forward(target) {
      const server = net.createServer(relayTo(splitHostPort(target), sockets));
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, hostAddress, () => resolve());
      });
      return `${hostAddress}:${(server.address() as net.AddressInfo).port}`;
    },
    async destroy() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      // Deleting a namespace deletes its veth end and with it the host end; the explicit delete covers a namespace
      // still held open by a process that outlived its test.
      for (const node of nodes) {
        await ip('link', 'del', node.hostVeth).catch(() => undefined);
        await ip('netns', 'del', node.ns).catch(() => undefined);
      }
      await ip('link', 'del', bridge).catch(() => undefined);
    },
  };
}
