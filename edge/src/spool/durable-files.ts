/**
 * File durability helpers: fsync a file and its folder (a rename or a new
 * name is only durable once the folder is fsynced; POSIX fsync(2), and
 * "Files are hard", Dan Luu), and SHA-256 of a file streamed from disk.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';

/** fsyncs a file's data and metadata. */
export async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncs a folder, so that names created or renamed in it survive power loss. */
export async function fsyncDir(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some file systems refuse fsync on a directory (EINVAL); the data itself is synced.
    if ((error as NodeJS.ErrnoException).code !== 'EINVAL') throw error;
  } finally {
    await handle.close();
  }
}

/** SHA-256 (lower-case hex) and size of a file. */
export async function sha256File(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  await pipeline(createReadStream(path), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      hash.update(chunk);
      sizeBytes += chunk.length;
    }
  });
  return { sha256: hash.digest('hex'), sizeBytes };
}
