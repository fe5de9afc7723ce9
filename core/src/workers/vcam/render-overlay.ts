import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PolyvisionError, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries } from '../detect/frames/index.ts';
import type { TracksFile } from '../track/tracks-format.ts';
import type { BallPosition } from './ball-positions.ts';
import type { CameraPath } from './camera-path.ts';
import { overlayAss } from './overlay-ass.ts';
import type { PitchRegion } from './pitch-region.ts';

/**
 * Renders `overlay.mp4`: the panorama downscaled to at most `maxWidth`
 * pixels wide, with the tracks, the ball and the crop window drawn by libass
 * from a generated ASS script (see `overlayAss`); H.264 (libx264 veryfast,
 * CRF 26), no audio. One ffmpeg process; it dies on abort.
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
  const W = params.tracks.detections.source.width;
  const H = params.tracks.detections.source.height;
  const width = 2 * Math.floor(Math.min(W, params.maxWidth ?? 1920) / 2);
  const height = Math.max(2, 2 * Math.round((H * width) / W / 2));
  const stamp = `${process.pid}.${Date.now()}`;
  const assPath = join(dirname(params.outputPath), `overlay.${stamp}.ass`);
  const temporary = `${params.outputPath}.${stamp}.part.mp4`;
  await writeFile(
    assPath,
    overlayAss({
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
  );
  const expected = Math.max(1, params.tracks.detections.source.frameCount);
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
      '-an',
      '-vf',
      `setpts=PTS-STARTPTS,scale=${width}:${height},ass=${basename(assPath)}`,
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '26',
      '-pix_fmt',
      'yuv420p',
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
  return { width, height };
}
