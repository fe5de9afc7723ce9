import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PolyvisionError, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import { analysisSelectFilter, type MediaBinaries } from '../detect/frames/index.ts';
import type { TracksFile } from '../track/tracks-format.ts';
import type { BallPosition } from './ball-positions.ts';
import type { CameraPath } from './camera-path.ts';
import { overlayAss } from './overlay-ass.ts';
import type { PitchRegion } from './pitch-region.ts';

/** What {@link planTracksOverlay} gives a renderer: the overlay's size and its ASS script. */
export interface TracksOverlayPlan {
  width: number;
  height: number;
  /** The ASS script (tracks, ball, crop window), in overlay pixels. */
  ass: string;
  /** The ffmpeg filter chain after the panorama (`setpts`), given the script's file name. */
  filter: (assFile: string) => string;
  /**
   * Output options of `overlay.mp4`: libx264 veryfast, CRF 26, yuv420p, no audio; at the analysis
   * rate (`-r`) when only the analysed frames are kept.
   */
  codecArgs: string[];
  /** Frames the overlay will have (for progress). */
  frames: number;
}

/**
 * The overlay of the tracks on the panorama: downscaled to at most `maxWidth` pixels wide, the tracks,
 * the ball and the crop window drawn by libass from a generated ASS script (see `overlayAss`). When
 * the tracks were analysed below the source's rate `F`, only the analysed source frames are drawn
 * (the detect stage's `analysisSelectFilter`: the same pictures), as a constant-rate video at the
 * analysis rate `r` — analysed frame `k` at `k / r` s, where its boxes are drawn (source time
 * `⌈k·F/r⌉ / F`, at most one source frame later), so that the segments' overlays join end to end:
 * every box sits on the picture it was found in — not held over the 1–2 source frames after it
 * while the people move on — and the overlay costs ~F/r times less to scale, draw and encode
 * (bench/README.md, vcam).
 */
export function planTracksOverlay(params: {
  tracks: TracksFile;
  path: CameraPath;
  ball: readonly (BallPosition | undefined)[];
  pitch: PitchRegion;
  /** @defaultValue 1920 */
  maxWidth?: number;
}): TracksOverlayPlan {
  const W = params.tracks.detections.source.width;
  const H = params.tracks.detections.source.height;
  const width = 2 * Math.floor(Math.min(W, params.maxWidth ?? 1920) / 2);
  const height = Math.max(2, 2 * Math.round((H * width) / W / 2));
  const { analysisFps, source } = params.tracks.detections;
  const select = analysisSelectFilter(analysisFps, source.fps);
  return {
    width,
    height,
    ass: overlayAss({
      width,
      height,
      scale: width / W,
      tracks: params.tracks.tracks,
      fps: params.tracks.detections.analysisFps,
      frameCount: params.tracks.frameCount,
      path: params.path,
      ball: params.ball,
      pitch: params.pitch,
    }),
    filter: (assFile) =>
      `${select ? `${select},setpts=N/(${analysisFps}*TB),` : ''}scale=${width}:${height},ass=${assFile}`,
    codecArgs: [
      ...(select ? ['-r', String(analysisFps)] : []),
      ...['-an', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '26', '-pix_fmt', 'yuv420p'],
    ],
    frames: select ? params.tracks.frameCount : source.frameCount,
  };
}

/**
 * Renders `overlay.mp4` alone ({@link planTracksOverlay}), in its own ffmpeg process, which dies on
 * abort. The vcam stage renders it with the virtual camera from one decode instead
 * (`renderVirtualCamera`'s `overlay`).
 *
 * @returns the overlay's size.
 * @throws PolyvisionError `encode_failed` when ffmpeg fails; `aborted` on abort.
 */
export async function renderTracksOverlay(params: {
  inputPath: string;
  outputPath: string;
  tracks: TracksFile;
  path: CameraPath;
  ball: readonly (BallPosition | undefined)[];
  pitch: PitchRegion;
  /** @defaultValue 1920 */
  maxWidth?: number;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
}): Promise<{ width: number; height: number }> {
  const plan = planTracksOverlay(params);
  const stamp = `${process.pid}.${Date.now()}`;
  const assPath = join(dirname(params.outputPath), `overlay.${stamp}.ass`);
  const temporary = `${params.outputPath}.${stamp}.part.mp4`;
  await writeFile(assPath, plan.ass);
  const expected = Math.max(1, plan.frames);
  const child = spawnChild(
    params.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    [
      '-nostdin',
      '-v',
      'error',
      '-nostats',
      '-progress',
      'pipe:1',
      '-i',
      params.inputPath,
      '-vf',
      `setpts=PTS-STARTPTS,${plan.filter(basename(assPath))}`,
      ...plan.codecArgs,
      '-movflags',
      '+faststart',
      '-y',
      basename(temporary),
    ],
    { cwd: dirname(params.outputPath), signal: params.signal, killTimeoutMs: 1000 },
  );
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    const m = /frame=(\d+)/.exec(
      chunk
        .split('\n')
        .filter((l) => l.startsWith('frame='))
        .at(-1) ?? '',
    );
    if (m) params.onProgress?.(Math.min(1, Number(m[1]) / expected));
  });
  try {
    try {
      await child.done;
    } catch (cause) {
      params.signal?.throwIfAborted();
      throw new PolyvisionError('encode_failed', `ffmpeg could not render the overlay: ${String(cause)}`, { cause });
    }
    await rename(temporary, params.outputPath);
  } catch (error) {
    await child.kill();
    await rm(temporary, { force: true });
    throw error;
  } finally {
    await rm(assPath, { force: true });
  }
  params.onProgress?.(1);
  return { width: plan.width, height: plan.height };
}
