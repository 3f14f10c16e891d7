/**
 * Tasks run one after another, each after every task queued before it has settled. A task's failure is its
 * caller's (the promise `run` returns rejects with it); the queue only waits for it to settle, so one failure
 * never holds up or fails the tasks behind it.
 */
export class Serial {
  private tail: Promise<void> = Promise.resolve();

  run<T>(task: () => T | Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = settled(result);
    return result;
  }
}

/** One Serial per key (a repository, a file), forgotten once its last task has settled. */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => T | Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = settled(result);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task queued or running. */
  get busy(): number {
    return this.tails.size;
  }
}

/** Resolves when `p` settles, either way: its rejection is handled by whoever holds `p` itself. */
function settled(p: Promise<unknown>): Promise<void> {
  return p.then(
    () => undefined,
    () => undefined,
  );
}
