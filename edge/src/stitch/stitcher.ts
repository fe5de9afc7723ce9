/**
 * The stitcher: remap maps computed once per calibration (remap-maps.ts,
 * written by map-files.ts), then one ffmpeg run per segment
 * (filter-graph.ts) that writes the panorama MP4 atomically.
 */
import { mkdir, open, rename, rm } from 'node:fs/promises';
import {
  detectH264Encoder,
  type H264Encoder,
  type Logger,
  PolyvisionError,
  resolveFfmpegPath,
  silentLogger,
  spawnChild,
  type VenueCalibration,
} from '@polyvision/shared';
import { type CameraCorrection, type PanoramaEncoding, type StitchInput, stitchArgs } from './filter-graph.ts';
import { type CameraMapFiles, writeMapFiles } from './map-files.ts';
import { computeRemapMaps, type RemapMapOptions } from './remap-maps.ts';
import { SeamCheck, type SeamCheckOptions } from './seam-check.ts';

/** Options of {@link createStitcher}. */
export interface StitcherOptions extends RemapMapOptions {
  /** Folder for the map files (created if missing). */
  workDir: string;
  /** @defaultValue detectH264Encoder() (NVENC where it works, else libx264) */
  encoder?: H264Encoder;
  /** Encoding quality (CRF / CQ). @defaultValue 20 */
  quality?: number;
  /** x264 preset. @defaultValue 'veryfast' */
  preset?: string;
  /** Keyframe interval, frames. @defaultValue 50 */
  gopFrames?: number;
  /** The graph's chroma layout (filter-graph.ts). @defaultValue '420' */
  chromaLayout?: '420' | '444';
  ffmpegPath?: string;
  logger?: Logger;
  /**
   * The live seam check (seam-check.ts) after stitched segments, at most every `intervalS`;
   * off when absent. Its alarms go to `alarms`.
   */
  seamCheck?: Omit<SeamCheckOptions, 'logger' | 'ffmpegPath'>;
}

/** A ready stitcher for one venue. */
export interface Stitcher {
  readonly widthPx: number;
  readonly heightPx: number;
  readonly encoder: H264Encoder;
  /** Fraction of the panorama that the cameras see (0–1). */
  readonly coverage: number;
  readonly mapFiles: readonly CameraMapFiles[];
  /** Milliseconds spent computing and writing the maps. */
  readonly prepareMs: number;
  /** The venue calibration the maps were computed from (its `panorama` plane is the output's pixel frame). */
  readonly venue: VenueCalibration;
  /** The live seam check, when enabled. */
  readonly seamCheck: SeamCheck | null;
  /**
   * Stitches one segment (one file per camera, venue order; `null` for a
   * camera without this segment) into `outputPath`, written to a temporary
   * name, fsynced and renamed: the output either exists whole or not at all.
   *
   * When the seam check is on and due, it runs after the output is in place (never throws).
   *
   * @throws PolyvisionError `stitch_no_input` when every input is null;
   *   `stitch_failed` (with ffmpeg's stderr tail) when ffmpeg fails, e.g. an
   *   input is not a video; `aborted` when `signal` fires.
   */
  stitch(inputs: readonly StitchInput[], outputPath: string, signal?: AbortSignal): Promise<void>;
}

/**
 * Computes the remap maps and masks of `venue` ONCE and writes them to
 * `options.workDir`; returns the per-segment stitcher.
 *
 * @throws ValidationError `stitch_singular_calibration`, `stitch_calibration_uncovered`,
 *   `stitch_invalid_option` (see computeRemapMaps).
 */
export async function createStitcher(venue: VenueCalibration, options: StitcherOptions): Promise<Stitcher> {
  const started = performance.now();
  const logger = options.logger ?? silentLogger;
  const maps = computeRemapMaps(venue, options);
  await mkdir(options.workDir, { recursive: true });
  const mapFiles = await writeMapFiles(maps, options.workDir);
  const ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
  const encoder = options.encoder ?? (await detectH264Encoder({ logger, ffmpegPath }));
  const encoding: PanoramaEncoding = {
    encoder,
    quality: options.quality,
    preset: options.preset,
    gopFrames: options.gopFrames,
    chromaLayout: options.chromaLayout ?? '420',
  };
  const size = { widthPx: maps.widthPx, heightPx: maps.heightPx };
  const corrections: CameraCorrection[] = venue.cameras.map((c) => ({
    timeOffsetS: c.time_offset_s ?? 0,
    ...(c.color_gains ? { colorGains: c.color_gains } : {}),
  }));
  const seamCheck = options.seamCheck
    ? new SeamCheck(venue, maps, { ...options.seamCheck, logger, ffmpegPath: options.ffmpegPath })
    : null;
  const prepareMs = performance.now() - started;
  logger.info(
    {
      panorama: `${maps.widthPx}x${maps.heightPx}`,
      coverage: maps.coverage,
      pitch_coverage: maps.pitchCoverage,
      encoder,
      prepare_ms: Math.round(prepareMs),
    },
    'stitcher ready',
  );

  return {
    widthPx: maps.widthPx,
    heightPx: maps.heightPx,
    encoder,
    coverage: maps.coverage,
    mapFiles,
    prepareMs,
    venue,
    seamCheck,
    async stitch(inputs, outputPath, signal) {
      if (!inputs.some((i) => i)) {
        throw new PolyvisionError('stitch_no_input', 'no camera has a segment to stitch', { retriable: false });
      }
      const tmp = `${outputPath}.partial.mp4`;
      const child = spawnChild(ffmpegPath, stitchArgs(mapFiles, inputs, tmp, encoding, size, corrections), {
        stdout: 'ignore',
        signal,
        killTimeoutMs: 2_000,
      });
      try {
        await child.done;
        const handle = await open(tmp, 'r');
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(tmp, outputPath);
        if (seamCheck?.due() && !signal?.aborted) await seamCheck.check(inputs.map((i) => i?.path ?? null));
      } catch (error) {
        await rm(tmp, { force: true });
        if (error instanceof PolyvisionError && error.code === 'child_failed') {
          throw new PolyvisionError('stitch_failed', `stitching ${outputPath} failed: ${error.message}`, {
            cause: error,
            details: { inputs: inputs.map((i) => i?.path ?? null), ...error.details },
          });
        }
        throw error;
      }
    },
  };
}
