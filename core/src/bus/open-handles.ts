/** Something a bus driver opened and must close with the bus (a producer or a consumer). */
export interface Closable {
  close(): Promise<void>;
}

/**
 * The producers and consumers a bus driver has open, so that `MessageBus.close()`
 * closes what its users left open. A handle leaves the set when it is closed,
 * by its user or by {@link OpenHandles.closeAll}.
 */
export class OpenHandles {
  readonly #open = new Set<Closable>();

  /** Adds `handle` and wraps its `close()` to leave the set first; returns the same object. */
  track<T extends Closable>(handle: T): T {
    const close = handle.close.bind(handle);
    handle.close = async () => {
      this.#open.delete(handle);
      await close();
    };
    this.#open.add(handle);
    return handle;
  }

  /** Closes every open handle; a handle whose close fails does not stop the others. */
  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.#open].map((handle) => handle.close()));
  }
}
