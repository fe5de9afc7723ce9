import { ffprobe, PolyvisionError } from '@polyvision/shared';

/** What the stages need to know about a video file. */
export interface VideoInfo {
  width: number;
  height: number;
  /** Average frame rate (frames per second). */
  fps: number;
  durationMs: number;
  /** Frames in the container (counted packets), or duration × fps when it has none. */
  frameCount: number;
  codec: string;
  hasAudio: boolean;
}

/** Paths of the media tools; resolved from the environment (`@polyvision/shared/media`) when absent. */
export interface MediaBinaries {
  ffmpegPath?: string;
  ffprobePath?: string;
}

/** Options of {@link probeVideo}. */
export interface ProbeOptions {
  signal?: AbortSignal;
  binaries?: MediaBinaries;
  /** Shorter clips are refused with `clip_too_short`. @defaultValue 1000 */
  minDurationMs?: number;
}

const STILL_IMAGE_FORMATS = /(^|,)(image2|png_pipe|jpeg_pipe|bmp_pipe|webp_pipe|gif|tiff_pipe)(,|$)/;

/**
 * Reads a video's geometry, rate and duration with ffprobe.
 *
 * @throws PolyvisionError (retriable false): `input_not_video` when ffprobe
 *   cannot read the file, it has no video stream, or it is a still image;
 *   `clip_too_short` when it lasts less than `minDurationMs`;
 *   `ffprobe_not_found`. `probe_timeout` (retriable).
 */
export async function probeVideo(path: string, options: ProbeOptions = {}): Promise<VideoInfo> {
  const minDurationMs = options.minDurationMs ?? 1000;
  let probe: Awaited<ReturnType<typeof ffprobe>>;
  try {
    probe = await ffprobe(path, { signal: options.signal, ffprobePath: options.binaries?.ffprobePath });
  } catch (error) {
    options.signal?.throwIfAborted();
    if (error instanceof PolyvisionError && error.code === 'probe_failed') {
      throw new PolyvisionError('input_not_video', `not a readable video: ${error.message}`, {
        cause: error,
        details: { path },
      });
    }
    throw error;
  }
  const video = probe.video;
  const formatName = probe.formatName ?? '';
  if (!video || !(video.width && video.height) || STILL_IMAGE_FORMATS.test(formatName)) {
    throw new PolyvisionError('input_not_video', `no video stream in ${path} (format ${formatName || 'unknown'})`, {
      details: { path },
    });
  }
  const fps = video.fps ?? 0;
  const durationSeconds = video.duration ?? probe.durationSeconds ?? Number.NaN;
  if (!(fps > 0) || !Number.isFinite(durationSeconds)) {
    throw new PolyvisionError('input_not_video', `video stream of ${path} has no frame rate or duration`, {
      details: { path },
    });
  }
  const durationMs = durationSeconds * 1000;
  if (durationMs < minDurationMs) {
    throw new PolyvisionError(
      'clip_too_short',
      `clip lasts ${durationMs.toFixed(0)} ms; at least ${minDurationMs} ms are needed`,
      { details: { path, durationMs, minDurationMs } },
    );
  }
  return {
    width: video.width,
    height: video.height,
    fps,
    durationMs,
    frameCount: probe.frameCount && probe.frameCount > 0 ? probe.frameCount : Math.round(durationSeconds * fps),
    codec: video.codec_name ?? 'unknown',
    hasAudio: probe.streams.some((s) => s.codec_type === 'audio'),
  };
}
