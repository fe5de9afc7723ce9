import { PolyvisionError, readFrames as readFixedFrames, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries, VideoInfo } from './probe-video.ts';

/** One decoded frame: packed 8-bit pixels, row-major, 3 bytes per pixel. */
export interface RawFrame {
  /** 0-based index in the decoded (resampled) sequence. */
  index: number;
  /** Presentation time from the start of the clip, ms (index / fps). */
  timeMs: number;
  width: number;
  height: number;
  /** `width × height × 3` bytes in `pixelFormat` order. */
  data: Buffer;
}

/** Options of {@link readVideoFrames}. */
export interface ReadFramesOptions {
  /** The probe of the file (from `probeVideo`): size, rate, duration. */
  info: VideoInfo;
  /** Frames per second to decode at (ffmpeg `fps` filter); the source rate when absent. */
  fps?: number;
  /** Output size; the source size when absent. Scaled with ffmpeg's `area` filter. */
  width?: number;
  height?: number;
  /** @defaultValue 'bgr24' */
  pixelFormat?: 'bgr24' | 'rgb24';
  /**
   * A decoded count below this share of the expected one means the file is
   * truncated. @defaultValue 0.9
   */
  minDecodedShare?: number;
  /**
   * Decode errors ffmpeg may report (as a share of decoded frames) before the
   * file counts as corrupt; a few are normal in broadcast footage. @defaultValue 0.01
   */
  maxDecodeErrorShare?: number;
  signal?: AbortSignal;
  binaries?: MediaBinaries;
}

/**
 * Decodes a video with ffmpeg into raw frames, in order, one at a time (the
 * pipe's back-pressure keeps memory at a few frames).
 *
 * The ffmpeg child (`spawnChild`: dies with its owner) is killed when
 * `signal` aborts or the consumer stops iterating early.
 *
 * @throws PolyvisionError (retriable false): `video_corrupt` when ffmpeg fails,
 *   decodes nothing, or reports more decode errors than `maxDecodeErrorShare`;
 *   `video_truncated` when fewer than `minDecodedShare` of the frames the
 *   container announces arrive. The abort reason when aborted.
 */
export async function* readVideoFrames(path: string, options: ReadFramesOptions): AsyncGenerator<RawFrame> {
  const { info } = options;
  const width = options.width ?? info.width;
  const height = options.height ?? info.height;
  const fps = options.fps ?? info.fps;
  const pixelFormat = options.pixelFormat ?? 'bgr24';
  const filters: string[] = [];
  if (options.fps !== undefined) filters.push(`fps=${fps}`);
  if (width !== info.width || height !== info.height) filters.push(`scale=${width}:${height}:flags=area`);
  filters.push(`format=${pixelFormat}`);
  let errorLines = 0;
  const run = spawnChild(
    options.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    ['-nostdin', '-v', 'error', '-i', path, '-an', '-sn', '-dn', '-vf', filters.join(','), '-f', 'rawvideo', 'pipe:1'],
    {
      signal: options.signal,
      killTimeoutMs: 1000,
      onStderrLine: () => {
        errorLines += 1;
      },
    },
  );
  run.done.catch(() => {});
  let index = 0;
  try {
    try {
      for await (const data of readFixedFrames(run.stdout!, width * height * 3)) {
        yield { index, timeMs: (index * 1000) / fps, width, height, data };
        index += 1;
      }
      await run.done;
    } catch (error) {
      options.signal?.throwIfAborted();
      throw new PolyvisionError('video_corrupt', `ffmpeg could not decode ${path}: ${(error as Error).message}`, {
        cause: error,
        details: { path, decodedFrames: index },
      });
    }
    const lastError = run.stderrTail().at(-1) ?? '';
    if (index === 0) {
      throw new PolyvisionError('video_corrupt', `ffmpeg decoded no frame from ${path}: ${lastError}`, {
        details: { path, decodedFrames: 0 },
      });
    }
    const expected = Math.floor((info.durationMs / 1000) * fps);
    if (index < expected * (options.minDecodedShare ?? 0.9) - 1) {
      throw new PolyvisionError(
        'video_truncated',
        `decoded ${index} of ${expected} expected frames from ${path}: the file is truncated${lastError ? ` (${lastError})` : ''}`,
        { details: { path, decodedFrames: index, expectedFrames: expected } },
      );
    }
    if (errorLines > Math.max(2, index * (options.maxDecodeErrorShare ?? 0.01))) {
      throw new PolyvisionError(
        'video_corrupt',
        `${path} is corrupt: ffmpeg reported ${errorLines} decode errors in ${index} frames (last: ${lastError})`,
        { details: { path, decodedFrames: index, decodeErrors: errorLines } },
      );
    }
  } finally {
    await run.kill();
  }
}
