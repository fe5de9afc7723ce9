import { rename, rm } from 'node:fs/promises';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../../core/src/workers/detect/frames/index.ts';
import { type CameraPath, windowAt } from '../../core/src/workers/vcam/camera-path.ts';
import type { H264Encoder, Logger } from '../../shared/src/index.ts';
import {
  detectH264Encoder,
  PolyvisionError,
  resolveFfmpegPath,
  silentLogger,
  spawnChild,
} from '../../shared/src/index.ts';
import { cropResizeBgr } from './crop-resize-js.ts';

/** Parameters of {@link renderVirtualCamera}. */
export interface RenderVcamParams {
  /** The panorama (source of the crops, and of the audio). */
  inputPath: string;
  /** The MP4 to write (H.264, AAC when the source has audio); temporary name, renamed when complete. */
  outputPath: string;
  path: CameraPath;
  /** @defaultValue 1920 */
  outputWidth?: number;
  /** @defaultValue 1080 */
  outputHeight?: number;
  /** H.264 encoder; detected once per process (NVENC if it encodes, else libx264) when absent. */
  encoder?: H264Encoder;
  /** Constant quality (x264 CRF / NVENC CQ). @defaultValue 20 */
  quality?: number;
  signal?: AbortSignal;
  /** Share of frames done, in [0, 1]. */
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
  logger?: Logger;
}

/** What a render did. */
export interface RenderVcamSummary {
  outputPath: string;
  frames: number;
  encoder: H264Encoder;
  elapsedMs: number;
  framesPerSecond: number;
}

/**
 * The former renderer, kept as the benchmark's baseline. Renders the virtual camera: every source frame is decoded (ffmpeg → raw
 * BGR), cropped to the path's window at its time (interpolated between
 * analysed frames) and resized bilinearly to the output size in-process,
 * then piped into a second ffmpeg that encodes H.264 (and copies the audio,
 * re-encoded to AAC). Exact per frame, no filter-graph reconfiguration.
 *
 * @throws PolyvisionError: the decode errors of `readVideoFrames`
 *   (`video_corrupt`, `video_truncated`), `input_not_video`, `clip_too_short`;
 *   `encode_failed` when the encoder fails. Both ffmpeg children die on abort or failure.
 */
export async function renderVirtualCameraJs(params: RenderVcamParams): Promise<RenderVcamSummary> {
  const started = performance.now();
  const { signal } = params;
  const outW = params.outputWidth ?? 1920;
  const outH = params.outputHeight ?? 1080;
  if (outW % 2 !== 0 || outH % 2 !== 0) {
    throw new PolyvisionError('vcam_options_invalid', `output size must be even for yuv420p, got ${outW}×${outH}`);
  }
  const info = await probeVideo(params.inputPath, { signal, binaries: params.binaries });
  const encoder = params.encoder ?? (await detectH264Encoder({ logger: params.logger ?? silentLogger }));
  const quality = String(params.quality ?? 20);
  const temporary = `${params.outputPath}.${process.pid}.${Date.now()}.part.mp4`;
  const codecArgs =
    encoder === 'h264_nvenc'
      ? ['-c:v', 'h264_nvenc', '-preset', 'p4', '-rc', 'vbr', '-cq', quality, '-b:v', '0']
      : ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', quality];
  const enc = spawnChild(
    params.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    [
      '-nostdin',
      '-v',
      'error',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'bgr24',
      '-s',
      `${outW}x${outH}`,
      '-r',
      String(info.fps),
      '-i',
      'pipe:0',
      '-i',
      params.inputPath,
      '-map',
      '0:v:0',
      '-map',
      '1:a:0?',
      ...codecArgs,
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '128k',
      '-shortest',
      '-movflags',
      '+faststart',
      '-y',
      temporary,
    ],
    { stdin: 'pipe', stdout: 'ignore', signal, killTimeoutMs: 1000 },
  );
  enc.done.catch(() => {});
  const out = Buffer.alloc(outW * outH * 3);
  let frames = 0;
  const expected = Math.max(1, info.frameCount);
  try {
    for await (const frame of readVideoFrames(params.inputPath, { info, signal, binaries: params.binaries })) {
      cropResizeBgr(frame, windowAt(params.path, frame.timeMs), outW, outH, out);
      try {
        await enc.write(out);
      } catch (cause) {
        await enc.done.catch(() => {});
        throw new PolyvisionError('encode_failed', `the encoder stopped: ${enc.stderrTail().join(' | ')}`, { cause });
      }
      frames += 1;
      if (frames % 10 === 0) params.onProgress?.(Math.min(1, frames / expected));
    }
    await enc.end();
    try {
      await enc.done;
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PolyvisionError('encode_failed', `ffmpeg could not encode ${params.outputPath}: ${String(cause)}`, {
        cause,
      });
    }
    await rename(temporary, params.outputPath);
  } catch (error) {
    await enc.kill();
    await rm(temporary, { force: true });
    throw error;
  }
  params.onProgress?.(1);
  const elapsedMs = performance.now() - started;
  return { outputPath: params.outputPath, frames, encoder, elapsedMs, framesPerSecond: frames / (elapsedMs / 1000) };
}
