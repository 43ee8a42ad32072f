// Why a running loop was stopped from outside. Each reason ends the execution differently: a cancel is recorded
// as `cancelled`, a timeout as `failed`, while a shutdown or a lost lease writes nothing (the row stays running and
// the next owner resumes it from its journal).
export class CancelledByUser extends Error {
  constructor() {
    super('cancelled');
    this.name = 'CancelledByUser';
  }
}

export class ExecutionTimedOut extends Error {
  constructor(seconds: number) {
    super(`execution exceeded security.resources.timeout of ${seconds} s`);
    this.name = 'ExecutionTimedOut';
  }
}

export class IterationTimedOut extends Error {
  constructor(seconds: number) {
    super(`iteration exceeded iteration_timeout of ${seconds} s`);
    this.name = 'IterationTimedOut';
  }
}

export class NodeShuttingDown extends Error {
  constructor() {
    super('node shutting down');
    this.name = 'NodeShuttingDown';
  }
}

/** Reasons after which this node must not write to the execution any more. */
export function isHandOver(err: unknown): boolean {
  return err instanceof NodeShuttingDown || (err as { code?: string })?.code === 'lease_lost';
}
