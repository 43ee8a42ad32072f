// A timeout signal that is sure to fire. Node's AbortSignal.timeout() passed only into AbortSignal.any() can be
// garbage-collected before its time comes (nodejs/node#57736, open for Node 20): the composite holds its sources
// weakly and the timeout's timer holds its own signal weakly, so nothing keeps it alive and the timeout silently
// never fires. Seen here as an LLM call that outlived llm_timeout_seconds on a busy CI machine (more GC). The timer
// below closes over its controller, which keeps it reachable until the timer fires or is disposed.

export interface Deadline {
  /** Aborts after the time, or when a parent aborts (with the parent's reason). */
  readonly signal: AbortSignal;
  /** True when it was the time, not a parent, that aborted the signal. */
  timedOut(): boolean;
  /** Clears the timer and detaches from the parents; call it when the guarded work has ended. */
  dispose(): void;
}

export function deadline(ms: number, parents: readonly (AbortSignal | undefined)[] = []): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const sources = parents.filter((p): p is AbortSignal => p !== undefined);
  const onParentAbort = (e: Event): void => controller.abort((e.target as AbortSignal).reason);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError'));
  }, ms);
  // Like AbortSignal.timeout: the timer alone does not keep the process running.
  timer.unref();
  const dispose = (): void => {
    clearTimeout(timer);
    for (const p of sources) p.removeEventListener('abort', onParentAbort);
  };
  for (const p of sources) {
    if (p.aborted) {
      controller.abort(p.reason);
      break;
    }
    p.addEventListener('abort', onParentAbort, { once: true });
  }
  if (controller.signal.aborted) dispose();
  else controller.signal.addEventListener('abort', dispose, { once: true });
  return { signal: controller.signal, timedOut: () => timedOut, dispose };
}
