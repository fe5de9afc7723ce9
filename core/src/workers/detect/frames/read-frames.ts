import { PolyvisionError, readFrames as readFixedFrames, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries, VideoInfo } from './probe-video.ts';

/** One decoded frame: packed 8-bit pixels, row-major, 3 bytes per pixel. */
export interface RawFrame {
  /** 0-based index in the analysed sequence. */
  index: number;
  /** 0-based index of the source frame this one is (its decode order = presentation order). */
  sourceIndex: number;
  /** Presentation time of that source frame from the clip's first frame, ms (its pts, from ffmpeg `showinfo`). */
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
  /**
   * Frames per second to analyse; every source frame when absent or ≥ the source rate.
   * Picks source frames, never resamples: see {@link analysisSelectFilter}.
   */
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
 * The ffmpeg `select` filter that picks, for an analysis rate `r` and a source
 * rate `F` (frames per second), the first source frame of every `1/r` interval:
 * source frame `n` is kept when `⌊n·r/F⌋ > ⌊(n−1)·r/F⌋` (frame 0 always), so
 * analysed frame `k` is source frame `⌈k·F/r⌉` (at 25 fps and r = 3: frame 30
 * is source frame 250, pts 10.000 s). `undefined` when every frame is kept
 * (`r ≥ F`). Unlike the `fps=` filter it never duplicates or re-times a frame
 * (`fps=3` labels source frame 254 as 10.0 s: it rounds to the nearest output tick).
 */
export function analysisSelectFilter(analysisFps: number, sourceFps: number): string | undefined {
  if (analysisFps >= sourceFps) return undefined;
  const ratio = `${analysisFps}/${sourceFps}`;
  // 1e-6 keeps exact multiples (n·r/F = 30) from falling just below by rounding.
  return `select=gt(floor(n*${ratio}+1e-6)\\,floor((n-1)*${ratio}+1e-6))`;
}

/** `pts_time` of an ffmpeg `showinfo` frame line (`… n:  12 pts: 123 pts_time:4.92 …`). */
const SHOWINFO_PTS = /\] n:\s*\d+\s+pts:\s*-?\d+\s+pts_time:(-?[\d.e+-]+)/;

/**
 * Decodes a video with ffmpeg into raw frames, in order, one at a time (the
 * pipe's back-pressure keeps memory at a few frames). With `fps` below the
 * source rate, picks source frames ({@link analysisSelectFilter}) and passes
 * them through untouched (`-fps_mode passthrough`); each frame carries the
 * pts of its source frame (ffmpeg `showinfo`, read from stderr).
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
  const fps = Math.min(options.fps ?? info.fps, info.fps);
  const pixelFormat = options.pixelFormat ?? 'bgr24';
  const filters: string[] = [];
  const select = analysisSelectFilter(fps, info.fps);
  if (select) filters.push(select);
  filters.push('showinfo=checksum=0');
  if (width !== info.width || height !== info.height) filters.push(`scale=${width}:${height}:flags=area`);
  filters.push(`format=${pixelFormat}`);
  let errorLines = 0;
  let lastError = '';
  const ptsSeconds: number[] = [];
  let wake: (() => void) | undefined;
  const run = spawnChild(
    options.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    [
      '-nostdin',
      '-hide_banner',
      '-loglevel',
      'level+info',
      '-i',
      path,
      '-an',
      '-sn',
      '-dn',
      '-vf',
      filters.join(','),
      '-fps_mode',
      'passthrough',
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    {
      signal: options.signal,
      killTimeoutMs: 1000,
      onStderrLine: (line) => {
        const pts = SHOWINFO_PTS.exec(line);
        if (pts) {
          ptsSeconds.push(Number(pts[1]));
          wake?.();
        } else if (/\[(error|fatal|panic)\]/.test(line)) {
          errorLines += 1;
          lastError = line.replace(/^.*\[(error|fatal|panic)\]\s*/, '');
        }
      },
    },
  );
  run.done.catch(() => {});
  // showinfo writes a frame's line before the frame reaches the pipe; wait for it if stderr lags stdout.
  const ptsOf = async (index: number): Promise<number | undefined> => {
    while (ptsSeconds.length <= index) {
      const exited = await Promise.race([
        new Promise<false>((resolve) => {
          wake = () => resolve(false);
        }),
        run.done.then(
          () => true,
          () => true,
        ),
      ]);
      if (exited && ptsSeconds.length <= index) return undefined;
    }
    return ptsSeconds[index];
  };
  let index = 0;
  let firstPts: number | undefined;
  try {
    try {
      for await (const data of readFixedFrames(run.stdout!, width * height * 3)) {
        const pts = await ptsOf(index);
        firstPts ??= pts;
        const sinceStart = pts !== undefined && firstPts !== undefined ? pts - firstPts : index / fps;
        const timeMs = Math.round(sinceStart * 1e6) / 1e3;
        const sourceIndex = Math.round(sinceStart * info.fps);
        yield { index, sourceIndex, timeMs, width, height, data };
        index += 1;
      }
      await run.done;
    } catch (error) {
      options.signal?.throwIfAborted();
      throw new PolyvisionError(
        'video_corrupt',
        `ffmpeg could not decode ${path}: ${lastError || (error as Error).message}`,
        {
          cause: error,
          details: { path, decodedFrames: index },
        },
      );
    }
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
