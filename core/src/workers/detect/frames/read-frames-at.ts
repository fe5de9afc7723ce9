import { PolyvisionError, readFrames as readFixedFrames, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries, VideoInfo } from './probe-video.ts';

/** One frame picked at a time, packed BGR (`width × height × 3` bytes). */
export interface SampledFrame {
  timeMs: number;
  width: number;
  height: number;
  data: Buffer;
}

/** Clips up to this long are decoded once, picking the frames by index, instead of one seek per time. */
export const SEEK_FREE_MAX_DURATION_MS = 30_000;

/**
 * Decodes one frame at each of `timesMs`, at the source size, BGR. For a quick look at a few frames
 * (the detect stage's scale estimate). A clip up to {@link SEEK_FREE_MAX_DURATION_MS} long (a match
 * segment) is decoded once with ffmpeg's `select` picking source frame `⌈t·fps⌉` for each time: a
 * seek decodes from the previous keyframe, and a segment has one at its start, so four seeks would
 * decode it about twice. A longer clip gets one input seek (`-ss`) per time, then the first frame
 * from there, without decoding the whole file. Times past the end give no frame.
 *
 * @throws PolyvisionError `video_corrupt` (not retriable) when ffmpeg fails;
 *   the abort reason when `signal` aborts (the ffmpeg child dies with it).
 */
export async function readFramesAt(
  path: string,
  info: VideoInfo,
  timesMs: readonly number[],
  options: { signal?: AbortSignal; binaries?: MediaBinaries } = {},
): Promise<SampledFrame[]> {
  if (info.durationMs <= SEEK_FREE_MAX_DURATION_MS) return readFramesByIndex(path, info, timesMs, options);
  const frames: SampledFrame[] = [];
  for (const timeMs of timesMs) {
    const data = await decodeFrames(path, ['-ss', (timeMs / 1000).toFixed(3), '-i', path, '-frames:v', '1'], info, {
      ...options,
      at: `${timeMs} ms`,
    });
    for (const frame of data) frames.push({ timeMs, width: info.width, height: info.height, data: frame });
  }
  return frames;
}

async function readFramesByIndex(
  path: string,
  info: VideoInfo,
  timesMs: readonly number[],
  options: { signal?: AbortSignal; binaries?: MediaBinaries },
): Promise<SampledFrame[]> {
  // As a seek does: the first frame at or after t; none after the last frame.
  const wanted = [...new Set(timesMs.map((t) => Math.ceil((t / 1000) * info.fps - 1e-6)))]
    .filter((n) => n >= 0 && n < info.frameCount)
    .sort((a, b) => a - b);
  if (wanted.length === 0) return [];
  const select = `select=${wanted.map((n) => `eq(n\\,${n})`).join('+')}`;
  const data = await decodeFrames(
    path,
    ['-i', path, '-vf', select, '-fps_mode', 'passthrough', '-frames:v', String(wanted.length)],
    info,
    { ...options, at: `frames ${wanted.join(', ')}` },
  );
  return data.map((frame, i) => ({
    timeMs: Math.round((wanted[i]! / info.fps) * 1e6) / 1e3,
    width: info.width,
    height: info.height,
    data: frame,
  }));
}

/** Runs ffmpeg with `input` (its input and frame-picking arguments) and collects the BGR frames it writes. */
async function decodeFrames(
  path: string,
  input: string[],
  info: VideoInfo,
  options: { signal?: AbortSignal; binaries?: MediaBinaries; at: string },
): Promise<Buffer[]> {
  options.signal?.throwIfAborted();
  const run = spawnChild(
    options.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    ['-nostdin', '-v', 'error', ...input, '-an', '-pix_fmt', 'bgr24', '-f', 'rawvideo', 'pipe:1'],
    { signal: options.signal, killTimeoutMs: 1000 },
  );
  run.done.catch(() => {});
  const frames: Buffer[] = [];
  try {
    for await (const data of readFixedFrames(run.stdout!, info.width * info.height * 3)) frames.push(data);
    await run.done;
    return frames;
  } catch (error) {
    options.signal?.throwIfAborted();
    throw new PolyvisionError(
      'video_corrupt',
      `ffmpeg could not decode ${path} at ${options.at}: ${(error as Error).message}`,
      { cause: error, details: { path, at: options.at } },
    );
  } finally {
    await run.kill();
  }
}
