import { PolyvisionError, readFrames as readFixedFrames, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries, VideoInfo } from './probe-video.ts';

/** One frame picked at a time, packed BGR (`width × height × 3` bytes). */
export interface SampledFrame {
  timeMs: number;
  width: number;
  height: number;
  data: Buffer;
}

/**
 * Decodes one frame at each of `timesMs` (ffmpeg input seek `-ss`, then the
 * first frame from there), at the source size, BGR. For a quick look at a few
 * frames of a long clip (the detect stage's scale estimate) without decoding
 * the whole file. Times past the end give no frame.
 *
 * @throws PolyvisionError `video_corrupt` (not retriable) when ffmpeg fails on a seek;
 *   the abort reason when `signal` aborts (the ffmpeg child dies with it).
 */
export async function readFramesAt(
  path: string,
  info: VideoInfo,
  timesMs: readonly number[],
  options: { signal?: AbortSignal; binaries?: MediaBinaries } = {},
): Promise<SampledFrame[]> {
  const frames: SampledFrame[] = [];
  const size = info.width * info.height * 3;
  for (const timeMs of timesMs) {
    options.signal?.throwIfAborted();
    const run = spawnChild(
      options.binaries?.ffmpegPath ?? resolveFfmpegPath(),
      [
        '-nostdin',
        '-v',
        'error',
        '-ss',
        (timeMs / 1000).toFixed(3),
        '-i',
        path,
        '-an',
        '-frames:v',
        '1',
        '-pix_fmt',
        'bgr24',
        '-f',
        'rawvideo',
        'pipe:1',
      ],
      { signal: options.signal, killTimeoutMs: 1000 },
    );
    run.done.catch(() => {});
    try {
      for await (const data of readFixedFrames(run.stdout!, size)) {
        frames.push({ timeMs, width: info.width, height: info.height, data });
      }
      await run.done;
    } catch (error) {
      options.signal?.throwIfAborted();
      throw new PolyvisionError(
        'video_corrupt',
        `ffmpeg could not decode ${path} at ${timeMs} ms: ${(error as Error).message}`,
        {
          cause: error,
          details: { path, timeMs },
        },
      );
    } finally {
      await run.kill();
    }
  }
  return frames;
}
