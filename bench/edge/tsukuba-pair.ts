/**
 * The real two-camera rig beside the repository (../shared/footage/tsukuba-{left,right}.mp4) for the edge
 * benches: its paths (the process exits with a `skipped:` line when they are missing), a quiet ffmpeg run, and
 * one frame of each camera as a tiny lossless clip the stitcher takes as a segment.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { resolveFfmpegPath, spawnChild } from '../../shared/src/index.ts';

/** The pair, left to right, relative to the repository root. */
export const TSUKUBA_PAIR = ['../shared/footage/tsukuba-left.mp4', '../shared/footage/tsukuba-right.mp4'];

/** The pair's paths; exits the process (code 0, a `skipped:` line on stderr) when they are missing. */
export function tsukubaPairOrSkip(): string[] {
  if (!TSUKUBA_PAIR.every((p) => existsSync(p))) {
    process.stderr.write(`skipped: ${TSUKUBA_PAIR.join(', ')} missing\n`);
    process.exit(0);
  }
  return TSUKUBA_PAIR;
}

/** Runs ffmpeg with `args` (errors only, overwriting); rejects when it fails. */
export function runFfmpeg(args: string[]): Promise<unknown> {
  return spawnChild(resolveFfmpegPath(), ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], {
    stdout: 'ignore',
  }).done;
}

/** The frame at `atS` seconds of each camera as a one-frame lossless H.264 clip in `dir`, as stitcher inputs. */
export function oneFrameClips(cameras: readonly string[], dir: string, atS: number) {
  return Promise.all(
    cameras.map(async (p, i) => {
      const out = join(dir, `frame-${i}.mp4`);
      await runFfmpeg(['-ss', String(atS), '-i', p, '-frames:v', '1', '-c:v', 'libx264', '-qp', '0', out]);
      return { cameraId: `c${i}`, path: out };
    }),
  );
}
