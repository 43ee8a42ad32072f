// The address peers dial for a worker's NodeClusterService (RegisterNodeRequest.grpc_address). The bind address is
// right when it is a concrete address; a wildcard bind (0.0.0.0, ::) has no address of its own, and the host name
// then stands in — which is wrong wherever the name does not lead to this node: a network namespace shares the host's
// name but not its addresses, and behind NAT the reachable address is another one. `spec.cluster.advertise_address`
// says it explicitly: a host (the bound port is added) or host:port (a mapped port).
import os from 'node:os';

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** True when `address` already ends with a port (`host:port`, `[v6]:port`); a bare IPv6 address has none. */
function hasPort(address: string): boolean {
  return address.startsWith('[') ? /\]:\d{1,5}$/.test(address) : /^[^:]+:\d{1,5}$/.test(address);
}

export function advertisedAddress(o: { bind: string; boundPort: number; advertise?: string | undefined; hostname?: string }): string {
  if (o.advertise) return hasPort(o.advertise) ? o.advertise : `${bracket(o.advertise)}:${o.boundPort}`;
  const wildcard = o.bind === '0.0.0.0' || o.bind === '::' || o.bind === '';
  return `${bracket(wildcard ? (o.hostname ?? os.hostname()) : o.bind)}:${o.boundPort}`;
}
