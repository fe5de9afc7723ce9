import type { Readable } from 'node:stream';
import { PolyvisionError } from '../errors/index.ts';

/**
 * Reads a stream of fixed-size records — raw video frames from
 * `ffmpeg … -f rawvideo -` (width × height × bytes per pixel) — and yields
 * one Buffer of exactly `frameSizeBytes` per frame. Backpressure is natural:
 * the stream is read only as fast as the consumer pulls.
 *
 * @throws PolyvisionError `truncated_frame` when the stream ends inside a frame
 *   (`details.trailing_bytes`), or `invalid_frame_size` for a size < 1.
 */
export async function* readFrames(stream: Readable, frameSizeBytes: number): AsyncGenerator<Buffer> {
  if (!Number.isSafeInteger(frameSizeBytes) || frameSizeBytes < 1) {
    throw new PolyvisionError('invalid_frame_size', `frame size must be a positive integer, got ${frameSizeBytes}`);
  }
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes < frameSizeBytes) continue;
    let joined = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingBytes);
    let offset = 0;
    while (pendingBytes - offset >= frameSizeBytes) {
      yield Buffer.from(joined.subarray(offset, offset + frameSizeBytes));
      offset += frameSizeBytes;
    }
    joined = joined.subarray(offset);
    pending = joined.length > 0 ? [joined] : [];
    pendingBytes = joined.length;
  }
  if (pendingBytes > 0) {
    throw new PolyvisionError(
      'truncated_frame',
      `stream ended ${pendingBytes} bytes into a ${frameSizeBytes}-byte frame`,
      {
        details: { trailing_bytes: pendingBytes, frame_size_bytes: frameSizeBytes },
      },
    );
  }
}
