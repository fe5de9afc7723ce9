/**
 * `generateMatch`: simulates a match and renders it from a fixed camera rig
 * into one H.264 MP4 per camera (optionally a panorama MP4 rendered from the
 * virtual panorama camera), with ground truth and a venue calibration file.
 *
 * Output folder layout (see gt/README.md written with it):
 * ```
 * camera-<i>.mp4      one per camera, H.264 (libx264, yuv420p), constant frame rate
 * panorama.mp4        only with `panoramaVideo`
 * venue.json          VenueCalibration (shared/src/contracts/venue-calibration.ts)
 * gt/positions.csv    pitch positions per frame
 * gt/camera-<i>.mot.txt, gt/panorama.mot.txt   MOTChallenge boxes
 * gt/identities.csv, gt/README.md
 * manifest.json       written last: options, frame count, files with sizes
 * ```
 * Atomicity: everything is written into a hidden temporary folder inside the
 * output folder, moved into place when complete, and `manifest.json` comes
 * last; an existing manifest is removed first. A folder without
 * `manifest.json` is therefore not a finished clip. On error or abort the
 * temporary folder and the encoders are removed.
 *
 * Performance: each camera's background is rendered once; per frame the
 * background is copied and only the figures are drawn; raw RGB24 frames
 * stream into one ffmpeg per camera with backpressure, so memory stays flat.
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { access, constants, mkdir, mkdtemp, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PolyvisionError, ValidationError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../logging/index.ts';
import { resolveFfmpegPath } from '../media/index.ts';
import { type RunningChild, spawnChild } from '../process/index.ts';
import { type Appearance, chooseAppearance } from './appearance.ts';
import { renderBackground } from './background.ts';
import type { PinholeCamera } from './camera.ts';
import { drawFigures } from './draw-figures.ts';
import { figuresInView } from './figures.ts';
import { GROUND_TRUTH_README, identitiesCsv, motRows, POSITIONS_HEADER, positionRows } from './ground-truth.ts';
import { type CompiledSynthOptions, compileSynthOptions, type SynthOptions } from './options.ts';
import { buildRig } from './rig.ts';
import { MatchSimulation } from './simulation.ts';
import { venueCalibrationOf } from './venue.ts';

/** One file of the output, as listed in manifest.json. */
export interface ManifestFile {
  /** Path relative to the output folder. */
  path: string;
  kind: 'camera_video' | 'panorama_video' | 'calibration' | 'ground_truth' | 'documentation';
  size_bytes: number;
  /** Frames, for videos. */
  frames?: number;
}

/** manifest.json: written last; its presence marks a complete clip. */
export interface SynthManifest {
  version: 1;
  generator: 'polyvision synth-match';
  seed: number;
  fps: number;
  frame_count: number;
  duration_s: number;
  width_px: number;
  height_px: number;
  cameras: number;
  venue_id: string;
  files: ManifestFile[];
  created_at: string;
  elapsed_ms: number;
}

export interface GenerateOptions {
  /** Stops the run: encoders are killed, the temporary folder removed, and the promise rejects with `aborted`. */
  signal?: AbortSignal;
  logger?: Logger;
  /** Called after each frame with (frames done, total). */
  onProgress?: (done: number, total: number) => void;
  /** ffmpeg binary. @defaultValue resolveFfmpegPath() */
  ffmpegPath?: string;
}

interface View {
  name: string;
  camera: PinholeCamera;
  /** Null when this view only produces ground truth. */
  encoder: RunningChild | null;
  frame: Uint8Array | null;
  background: Uint8Array | null;
  gt: WriteStream;
}

async function writeText(stream: WriteStream, text: string): Promise<void> {
  if (text.length === 0) return;
  if (!stream.write(text)) await once(stream, 'drain');
}

async function closeStream(stream: WriteStream): Promise<void> {
  if (stream.closed) return;
  await new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.end(() => resolve());
  });
}

/**
 * Makes sure the output folder exists and is writable.
 * @throws ValidationError `synth_output_unwritable`.
 */
async function prepareOutDir(outDir: string): Promise<void> {
  try {
    await mkdir(outDir, { recursive: true });
    const s = await stat(outDir);
    if (!s.isDirectory()) throw new Error('not a directory');
    await access(outDir, constants.W_OK);
  } catch (error) {
    throw new ValidationError(
      'synth_output_unwritable',
      `cannot write to the output folder ${outDir}: ${(error as Error).message}`,
      {
        cause: error,
        details: { out_dir: outDir },
      },
    );
  }
}

function encoderArgs(o: CompiledSynthOptions, camera: PinholeCamera, file: string): string[] {
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-s',
    `${camera.widthPx}x${camera.heightPx}`,
    '-framerate',
    String(o.fps),
    '-i',
    'pipe:0',
    '-an',
    '-c:v',
    'libx264',
    '-preset',
    o.preset,
    '-crf',
    String(o.crf),
    '-g',
    String(o.gopFrames),
    '-pix_fmt',
    'yuv420p',
    '-threads',
    '2',
    '-movflags',
    '+faststart',
    '-f',
    'mp4',
    '-y',
    file,
  ];
}

/**
 * Generates a synthetic match clip into `options.outDir` and returns its manifest.
 *
 * @throws ValidationError `synth_invalid_option` (before any work), `synth_output_unwritable`.
 * @throws PolyvisionError `aborted` when `signal` fires; `child_failed`/`spawn_failed` when ffmpeg fails.
 */
export async function generateMatch(options: SynthOptions, run: GenerateOptions = {}): Promise<SynthManifest> {
  const started = performance.now();
  const o = compileSynthOptions(options);
  const logger = run.logger ?? silentLogger;
  const signal = run.signal;
  signal?.throwIfAborted();
  await prepareOutDir(o.outDir);
  const ffmpegPath = run.ffmpegPath ?? resolveFfmpegPath();
  await unlink(join(o.outDir, 'manifest.json')).catch(() => {});
  const tmp = await mkdtemp(join(o.outDir, '.synth-tmp-'));
  const views: View[] = [];
  try {
    await mkdir(join(tmp, 'gt'));
    const rig = buildRig({
      cameraCount: o.cameras,
      widthPx: o.widthPx,
      heightPx: o.heightPx,
      heightM: o.rigHeightM,
      setbackM: o.rigSetbackM,
      panoramaWidthPx: o.panoramaWidthPx,
    });
    const look: Appearance = chooseAppearance(o.seed);
    const specs = [
      ...rig.cameras.map((camera, i) => ({ name: `camera-${i}`, camera, video: true })),
      { name: 'panorama', camera: rig.panorama, video: o.panoramaVideo },
    ];
    for (const spec of specs) {
      const gt = createWriteStream(join(tmp, 'gt', `${spec.name}.mot.txt`));
      const view: View = { name: spec.name, camera: spec.camera, encoder: null, frame: null, background: null, gt };
      views.push(view);
      if (!spec.video) continue;
      view.background = renderBackground(spec.camera, look);
      view.frame = new Uint8Array(view.background.length);
      view.encoder = spawnChild(ffmpegPath, encoderArgs(o, spec.camera, join(tmp, `${spec.name}.mp4`)), {
        stdin: 'pipe',
        stdout: 'ignore',
        signal,
        killTimeoutMs: 2_000,
      });
      view.encoder.done.catch(() => {});
      signal?.throwIfAborted();
    }
    logger.info({ out_dir: o.outDir, frames: o.frameCount, cameras: o.cameras }, 'synthetic match: rendering');

    const positions = createWriteStream(join(tmp, 'gt', 'positions.csv'));
    try {
      await writeText(positions, POSITIONS_HEADER);
      const sim = new MatchSimulation(o.seed, o.fps);
      const first = sim.state();
      await writeFile(join(tmp, 'gt', 'identities.csv'), identitiesCsv(first));
      for (let frame = 0; frame < o.frameCount; frame++) {
        if (signal?.aborted)
          throw new PolyvisionError('aborted', 'synthetic match generation was aborted', { cause: signal.reason });
        const state = frame === 0 ? first : sim.state();
        const writes: Promise<void>[] = [writeText(positions, positionRows(state))];
        for (const view of views) {
          const figures = figuresInView(view.camera, state);
          writes.push(writeText(view.gt, motRows(frame, figures, view.camera.widthPx, view.camera.heightPx)));
          if (view.encoder && view.frame && view.background) {
            view.frame.set(view.background);
            drawFigures(
              { widthPx: view.camera.widthPx, heightPx: view.camera.heightPx, data: view.frame },
              figures,
              look,
            );
            writes.push(view.encoder.write(view.frame));
          }
        }
        // Settle every write before reacting to a failure, so that nothing is left pending.
        const settled = await Promise.allSettled(writes);
        const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
        sim.step();
        run.onProgress?.(frame + 1, o.frameCount);
      }
    } finally {
      await closeStream(positions);
    }
    for (const view of views) {
      await closeStream(view.gt);
      if (view.encoder) {
        await view.encoder.end();
        await view.encoder.done;
      }
    }

    const venue = venueCalibrationOf(rig, o.venueId);
    await writeFile(join(tmp, 'venue.json'), `${JSON.stringify(venue, null, 2)}\n`);
    await writeFile(join(tmp, 'gt', 'README.md'), GROUND_TRUTH_README);

    // Move into place, then the manifest last.
    const files: ManifestFile[] = [];
    const move = async (path: string, kind: ManifestFile['kind'], frames?: number) => {
      const size = (await stat(join(tmp, path))).size;
      await rename(join(tmp, path), join(o.outDir, path));
      files.push({ path, kind, size_bytes: size, ...(frames === undefined ? {} : { frames }) });
    };
    await mkdir(join(o.outDir, 'gt'), { recursive: true });
    for (const view of views) {
      if (view.encoder)
        await move(`${view.name}.mp4`, view.name === 'panorama' ? 'panorama_video' : 'camera_video', o.frameCount);
      await move(`gt/${view.name}.mot.txt`, 'ground_truth');
    }
    await move('gt/positions.csv', 'ground_truth');
    await move('gt/identities.csv', 'ground_truth');
    await move('gt/README.md', 'documentation');
    await move('venue.json', 'calibration');
    const manifest: SynthManifest = {
      version: 1,
      generator: 'polyvision synth-match',
      seed: o.seed,
      fps: o.fps,
      frame_count: o.frameCount,
      duration_s: o.frameCount / o.fps,
      width_px: o.widthPx,
      height_px: o.heightPx,
      cameras: o.cameras,
      venue_id: o.venueId,
      files,
      created_at: new Date().toISOString(),
      elapsed_ms: Math.round(performance.now() - started),
    };
    await writeFile(join(tmp, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await rename(join(tmp, 'manifest.json'), join(o.outDir, 'manifest.json'));
    logger.info({ out_dir: o.outDir, elapsed_ms: manifest.elapsed_ms }, 'synthetic match: done');
    return manifest;
  } catch (error) {
    await Promise.all(views.map((v) => v.encoder?.kill()));
    await Promise.allSettled(views.map((v) => closeStream(v.gt)));
    if (signal?.aborted && !(error instanceof PolyvisionError && error.code === 'aborted')) {
      throw new PolyvisionError('aborted', 'synthetic match generation was aborted', { cause: error });
    }
    if (error instanceof PolyvisionError && error.code === 'child_stdin_closed') {
      // An encoder stopped reading: its own failure (exit code, stderr) says why.
      for (const v of views) {
        const failure = await v.encoder?.done.then(
          () => undefined,
          (e: unknown) => e,
        );
        if (failure instanceof PolyvisionError && failure.code === 'child_failed') throw failure;
      }
    }
    throw error;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
