import { readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { generateMatch, type SynthManifest } from '@polyvision/shared';

/** The default sample: a synthetic 3-camera match (shared/src/synthetic). */
export interface SampleOptions {
  /** Folder the clips are cached in (`.cache/demo` in the repository). */
  cacheDir: string;
  /** Clip length, seconds. @defaultValue 20 */
  durationS: number;
  /** Camera size, pixels (even). @defaultValue 1280×720 */
  widthPx: number;
  heightPx: number;
  /** @defaultValue 25 */
  fps: number;
  /** @defaultValue 7 */
  seed: number;
}

/** A ready sample: camera files in venue order and their calibration. */
export interface Sample {
  dir: string;
  cameraPaths: string[];
  calibrationPath: string;
  manifest: SynthManifest;
  /** True when this call generated it (false: it came from the cache). */
  generated: boolean;
}

/**
 * Returns the cached sample for these options, generating it first when it is
 * missing (manifest.json, written last by the generator, marks a complete
 * clip; a half-written folder is regenerated).
 *
 * @throws ValidationError `synth_invalid_option`; PolyvisionError from ffmpeg or `aborted`.
 */
export async function ensureSample(
  options: SampleOptions,
  run: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void } = {},
): Promise<Sample> {
  const name = `synthetic-${options.widthPx}x${options.heightPx}-${options.durationS}s-${options.fps}fps-seed${options.seed}`;
  const dir = join(options.cacheDir, name);
  const manifestPath = join(dir, 'manifest.json');
  let generated = false;
  const exists = await stat(manifestPath).then(
    () => true,
    () => false,
  );
  if (!exists) {
    const partial = `${dir}.partial-${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await generateMatch(
      {
        outDir: partial,
        cameras: 3,
        durationS: options.durationS,
        fps: options.fps,
        widthPx: options.widthPx,
        heightPx: options.heightPx,
        seed: options.seed,
      },
      { ...(run.signal ? { signal: run.signal } : {}), ...(run.onProgress ? { onProgress: run.onProgress } : {}) },
    ).catch(async (error: unknown) => {
      await rm(partial, { recursive: true, force: true });
      throw error;
    });
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
    generated = true;
  }
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as SynthManifest;
  const cameraPaths = manifest.files
    .filter((f) => f.kind === 'camera_video')
    .map((f) => join(dir, f.path))
    .sort();
  const calibration = manifest.files.find((f) => f.kind === 'calibration');
  return {
    dir,
    cameraPaths,
    calibrationPath: join(dir, calibration?.path ?? 'venue.json'),
    manifest,
    generated,
  };
}
