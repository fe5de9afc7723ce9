import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * A JSON document kept in one file, replaced atomically: written to
 * `<path>.tmp`, fsynced, renamed over `<path>`, and the folder fsynced, so a
 * crash (even `kill -9` or power loss) leaves either the old or the new
 * version, never a torn one. Concurrent `write` calls are coalesced: at most
 * one write runs, and a call resolves once a write that began after it has
 * finished.
 */
export class SnapshotFile<T> {
  readonly #path: string;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #latest: (() => T) | undefined;

  constructor(path: string) {
    this.#path = path;
  }

  /** Reads the document; `undefined` when the file does not exist. @throws on unreadable or invalid JSON. */
  async read(): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(this.#path, 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * Schedules a write of `produce()` (called when the write starts, so it sees
   * the newest state) and resolves when that write is durable.
   */
  write(produce: () => T): Promise<void> {
    this.#latest = produce;
    if (this.#queued) return this.#queued;
    if (!this.#running) {
      this.#running = this.#writeNow().finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    const after = this.#running.catch(() => {});
    this.#queued = after.then(() => {
      this.#queued = undefined;
      return this.write(this.#latest ?? produce);
    });
    return this.#queued;
  }

  async #writeNow(): Promise<void> {
    const produce = this.#latest;
    if (!produce) return;
    const body = `${JSON.stringify(produce())}\n`;
    await mkdir(dirname(this.#path), { recursive: true });
    const tmp = `${this.#path}.tmp`;
    const handle = await open(tmp, 'w');
    try {
      await handle.writeFile(body, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.#path);
    await fsyncDir(dirname(this.#path));
  }
}

/** fsyncs a folder so a rename or unlink in it is durable (POSIX; a no-op where folders cannot be opened). */
export async function fsyncDir(path: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM') throw error;
  } finally {
    await handle?.close();
  }
}
