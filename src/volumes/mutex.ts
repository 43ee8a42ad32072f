// A keyed mutex: one critical section at a time per key (a volume) inside this process. The volume service holds it
// only around "measure what is on disk, reserve the delta in SQL, apply the change", so that two changes to the
// same path cannot both measure the old size; the bulk of a write (streaming into a staging file) runs outside it.
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      // The last one out removes the key, so the map does not grow with every volume ever touched.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
