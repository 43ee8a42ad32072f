// A TCP relay for tests that stand between two real peers (a gate that can be cut, a forward into a network
// namespace): each accepted connection is piped both ways to the target, tracked in `sockets` so that the test can
// reset or destroy every open one, and untracked when either side ends.
import net from 'node:net';

/** `host:port` (the host may itself hold colons, e.g. an IPv6 literal) → its parts. */
export function splitHostPort(target: string): { host: string; port: number } {
  const sep = target.lastIndexOf(':');
  return { host: target.slice(0, sep), port: Number(target.slice(sep + 1)) };
}

/** A connection handler for net.createServer that relays to `target`; `onData` sees the bytes sent inbound. */
export function relayTo(target: { host: string; port: number }, sockets: Set<net.Socket>, onData?: (chunk: Buffer) => void): (inbound: net.Socket) => void {
  return (inbound) => {
    const outbound = net.connect(target.port, target.host);
    sockets.add(inbound).add(outbound);
    if (onData) inbound.on('data', onData);
    inbound.pipe(outbound).pipe(inbound);
    const drop = (): void => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
  };
}
