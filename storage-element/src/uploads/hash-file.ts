import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/**
 * SHA-256 state of a file's first `lengthBytes` bytes (streamed, 1 MiB
 * reads), to continue hashing after a restart lost the in-memory state.
 */
export async function hashFilePrefix(path: string, lengthBytes: number): Promise<Hash> {
  const hash = createHash('sha256');
  if (lengthBytes === 0) return hash;
  for await (const chunk of createReadStream(path, { start: 0, end: lengthBytes - 1, highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
  }
  return hash;
}
