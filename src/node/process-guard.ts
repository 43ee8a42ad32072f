// The process's last line of defence (issue 20): an unhandled promise rejection or an uncaught exception is logged
// and counted (orch_unhandled_errors_total) instead of killing a node that holds leases, streams and actors.
//
// - A rejection nobody handled left no state half-changed by its throw: logged at error, counted, and the node
//   runs on (Node's default since v15 is to die).
// - An uncaught exception from a dependency outage (a driver's 'error' event with no listener, a socket reset) is
//   the same: logged at warn and counted.
// - Any other uncaught exception may have unwound through code in the middle of changing state: logged at fatal
//   and the process exits (1), so a supervisor restarts it from the database, as after a crash.
// Every one of these is still a bug to fix where it happens; the guard keeps the node up until it is.
import { isOutage } from '../errors/outage.ts';
import type { Logger } from '../logging/logger.ts';
import { orchMetrics } from '../observability/metrics.ts';

export interface ProcessGuardOptions {
  /** Called for an uncaught exception that is not an outage. Default: process.exit(1). */
  exit?: (code: number) => void;
}

/** Installs the handlers; returns a function that removes them. Only the edge (the CLI's `up`) calls this. */
export function installProcessGuard(logger: Logger, options: ProcessGuardOptions = {}): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const count = (kind: 'rejection' | 'exception', outage: boolean): void => {
    try {
      orchMetrics().unhandledErrors.add(1, { kind, outage: String(outage) });
    } catch {
      // Metrics must never turn a logged error into a crash.
    }
  };
  const onRejection = (reason: unknown): void => {
    const outage = isOutage(reason);
    count('rejection', outage);
    logger[outage ? 'warn' : 'error']({ err: reason, outage }, 'unhandled promise rejection; the node keeps running');
  };
  const onException = (err: Error, origin: string): void => {
    const outage = isOutage(err);
    count('exception', outage);
    if (outage) {
      logger.warn({ err, origin }, 'uncaught dependency error; the node keeps running');
      return;
    }
    logger.fatal({ err, origin }, 'uncaught exception; exiting');
    // The log is written asynchronously: flush it first (bounded), or the one line that says why would be lost.
    let gone = false;
    const leave = (): void => {
      if (gone) return;
      gone = true;
      exit(1);
    };
    setTimeout(leave, 1_000);
    try {
      logger.flush(() => leave());
    } catch {
      leave();
    }
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}
