/**
 * An optional upload bandwidth cap: a token bucket (capacity one second of
 * traffic) that chunk reads wait on before they are handed to the tus
 * client, so that the average rate stays at or under the cap. The client
 * sends one chunk per PATCH, so with a cap the chunk size is kept at a
 * quarter of a second of traffic (at least 16 KiB) to keep bursts short.
 */
import { abortableSleep } from '@polyvision/shared';

export class BandwidthLimiter {
  readonly bytesPerSecond: number;
  #tokens: number;
  #last: number;

  /** @param bytesPerSecond - the cap, > 0. */
  constructor(bytesPerSecond: number) {
    this.bytesPerSecond = bytesPerSecond;
    this.#tokens = bytesPerSecond;
    this.#last = performance.now();
  }

  /** The chunk size to use under this cap, bytes. */
  chunkSizeBytes(requested: number): number {
    return Math.max(16 * 1024, Math.min(requested, Math.floor(this.bytesPerSecond / 4)));
  }

  /** Waits until `bytes` may be sent. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    const now = performance.now();
    this.#tokens = Math.min(this.bytesPerSecond, this.#tokens + ((now - this.#last) / 1000) * this.bytesPerSecond);
    this.#last = now;
    this.#tokens -= bytes;
    if (this.#tokens < 0) await abortableSleep((-this.#tokens / this.bytesPerSecond) * 1000, signal);
  }
}
