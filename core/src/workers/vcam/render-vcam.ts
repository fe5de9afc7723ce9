import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { H264Encoder, Logger } from '@polyvision/shared';
import { detectH264Encoder, PolyvisionError, resolveFfmpegPath, silentLogger, spawnChild } from '@polyvision/shared';
import { type MediaBinaries, probeVideo } from '../detect/frames/index.ts';
import type { CameraPath } from './camera-path.ts';
import { cropCommandScript } from './crop-commands.ts';
import type { TracksOverlayPlan } from './render-overlay.ts';

/** Parameters of {@link renderVirtualCamera}. */
export interface RenderVcamParams {
  /** The panorama (source of the crops, and of the audio). */
  inputPath: string;
  /** The MP4 to write (H.264, AAC when the source has audio); temporary name, renamed when complete. */
  outputPath: string;
  path: CameraPath;
  /** Output width, pixels (even). @defaultValue 1920 */
  outputWidth?: number;
  /** Output height, pixels (even). @defaultValue 1080 */
  outputHeight?: number;
  /** H.264 encoder; detected once per process (NVENC if it encodes, else libx264) when absent. */
  encoder?: H264Encoder;
  /** Constant quality (x264 CRF / NVENC CQ). @defaultValue 18 (an intermediate: the encode stage re-encodes it) */
  quality?: number;
  /** libx264 preset. @defaultValue 'superfast' (measured: bench/README.md "vcam") */
  x264Preset?: string;
  signal?: AbortSignal;
  /** Share of frames done, in [0, 1]. */
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
  logger?: Logger;
  /** Shorter panoramas are refused (`clip_too_short`). @defaultValue 1000 */
  minDurationMs?: number;
  /**
   * Also write the tracks overlay (`planTracksOverlay`) to `outputPath`, from the same decode of the
   * panorama (one ffmpeg process, the decoded frames split between the two chains).
   */
  overlay?: { outputPath: string; plan: TracksOverlayPlan };
}

/** What a render did. */
export interface RenderVcamSummary {
  outputPath: string;
  frames: number;
  encoder: H264Encoder;
  elapsedMs: number;
  framesPerSecond: number;
  /** crop commands sent (one per source frame whose integer crop changed). */
  cropCommands: number;
  /** how many of them changed the crop size (each re-initialises the scaler). */
  cropSizeChanges: number;
}

/**
 * Renders the virtual camera in one ffmpeg process: `setpts=PTS-STARTPTS`,
 * `sendcmd` (a script with the integer crop of every source frame, see
 * `cropCommandScript`), `crop@vcam` (exact, so odd offsets are kept),
 * `format=yuv420p`, a fixed bicubic `scale` to the output size, H.264 (and
 * the source audio re-encoded to AAC). No pixel passes through JavaScript. With `overlay`, the same
 * process writes the tracks overlay too: the panorama is decoded once for both (a `split`).
 *
 * ffmpeg 5.1 note: a `scale` fed directly by a `crop` whose height changes at
 * run time stalls; the `format` filter between them avoids it (checked on Debian's 5.1.x).
 *
 * @throws PolyvisionError `input_not_video`, `clip_too_short` (probe);
 *   `vcam_options_invalid` for an odd output size; `encode_failed` when ffmpeg
 *   fails; `aborted` on abort. ffmpeg dies on abort or failure; no partial file is left.
 */
export async function renderVirtualCamera(params: RenderVcamParams): Promise<RenderVcamSummary> {
  const started = performance.now();
  const { signal } = params;
  const outW = params.outputWidth ?? 1920;
  const outH = params.outputHeight ?? 1080;
  if (outW % 2 !== 0 || outH % 2 !== 0) {
    throw new PolyvisionError('vcam_options_invalid', `output size must be even for yuv420p, got ${outW}×${outH}`);
  }
  const info = await probeVideo(params.inputPath, {
    signal,
    binaries: params.binaries,
    minDurationMs: params.minDurationMs ?? 1000,
  });
  if (info.width !== params.path.sourceWidth || info.height !== params.path.sourceHeight) {
    throw new PolyvisionError(
      'vcam_options_invalid',
      `the camera path is planned for ${params.path.sourceWidth}×${params.path.sourceHeight}, the video is ${info.width}×${info.height}`,
    );
  }
  const encoder = params.encoder ?? (await detectH264Encoder({ logger: params.logger ?? silentLogger }));
  const quality = String(params.quality ?? 18);
  const stamp = `${process.pid}.${Date.now()}`;
  const temporary = `${params.outputPath}.${stamp}.part.mp4`;
  const scriptPath = join(dirname(params.outputPath), `vcam-crop.${stamp}.cmd`);
  const expected = Math.max(1, info.frameCount);
  const { script, first, commands, sizeChanges } = cropCommandScript(params.path, info.fps, expected + 2, outW, outH);
  await writeFile(scriptPath, script);
  const codecArgs =
    encoder === 'h264_nvenc'
      ? ['-c:v', 'h264_nvenc', '-preset', 'p4', '-rc', 'vbr', '-cq', quality, '-b:v', '0']
      : ['-c:v', 'libx264', '-preset', params.x264Preset ?? 'superfast', '-crf', quality];
  const vcamChain = [
    // ffmpeg refuses an empty sendcmd script: a path whose crop never moves needs none.
    ...(commands > 0 ? [`sendcmd=f=${basename(scriptPath)}`] : []),
    `crop@vcam=w=${first.width}:h=${first.height}:x=${first.x}:y=${first.y}:exact=1`,
    'format=yuv420p',
    `scale=${outW}:${outH}:flags=bicubic`,
    'setsar=1',
  ].join(',');
  const assPath = join(dirname(params.outputPath), `overlay.${stamp}.ass`);
  const overlay = params.overlay && { ...params.overlay, temporary: `${params.overlay.outputPath}.${stamp}.part.mp4` };
  if (overlay) await writeFile(assPath, overlay.plan.ass);
  /** An MP4 output written for streaming (moov first), replacing any file of that name. */
  const mp4 = (name: string) => ['-movflags', '+faststart', '-y', name];
  const vcamOutput = [...codecArgs, '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k', ...mp4(basename(temporary))];
  const graph = overlay
    ? [
        '-filter_complex',
        `[0:v:0]setpts=PTS-STARTPTS,split=2[v][o];[v]${vcamChain}[vcam];[o]${overlay.plan.filter(basename(assPath))}[overlay]`,
        '-map',
        '[vcam]',
        '-map',
        '0:a:0?',
        ...vcamOutput,
        '-map',
        '[overlay]',
        ...overlay.plan.codecArgs,
        ...mp4(overlay.temporary),
      ]
    : ['-map', '0:v:0', '-map', '0:a:0?', '-vf', `setpts=PTS-STARTPTS,${vcamChain}`, ...vcamOutput];
  let frames = 0;
  const child = spawnChild(
    params.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    ['-nostdin', '-v', 'error', '-nostats', '-progress', 'pipe:1', '-i', params.inputPath, ...graph],
    { cwd: dirname(params.outputPath), signal, killTimeoutMs: 1000 },
  );
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    const m = /frame=(\d+)\s*$/m.exec(
      chunk
        .split('\n')
        .filter((l) => l.startsWith('frame='))
        .at(-1) ?? '',
    );
    if (m) {
      frames = Number(m[1]);
      params.onProgress?.(Math.min(1, frames / expected));
    }
  });
  try {
    try {
      await child.done;
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PolyvisionError('encode_failed', `ffmpeg could not render ${params.outputPath}: ${String(cause)}`, {
        cause,
      });
    }
    await rename(temporary, params.outputPath);
    if (overlay) await rename(overlay.temporary, overlay.outputPath);
  } catch (error) {
    await child.kill();
    await rm(temporary, { force: true });
    if (overlay) {
      // Both outputs or neither.
      await rm(params.outputPath, { force: true });
      await rm(overlay.temporary, { force: true });
    }
    throw error;
  } finally {
    await rm(scriptPath, { force: true });
    await rm(assPath, { force: true });
  }
  params.onProgress?.(1);
  const elapsedMs = performance.now() - started;
  return {
    outputPath: params.outputPath,
    frames,
    encoder,
    elapsedMs,
    framesPerSecond: frames / (elapsedMs / 1000),
    cropCommands: commands,
    cropSizeChanges: sizeChanges,
  };
}
