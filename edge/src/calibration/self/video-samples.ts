/**
 * What the self-calibration reads from each camera's video, in one ffmpeg
 * decode per camera: a few full-resolution grey frames spread over the clip
 * (for the background frame and its features), the same frames in colour at
 * half size (pitch lines, colour balance), and every frame as
 * a small grey thumbnail (for motion energy: frozen cameras and the time offset).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe, PolyvisionError, resolveFfmpegPath, spawnChild, ValidationError } from '@polyvision/shared';

/** Size of the motion thumbnails, pixels. */
export const THUMB_WIDTH_PX = 192;
export const THUMB_HEIGHT_PX = 108;

/** One camera's samples. */
export interface VideoSamples {
  path: string;
  widthPx: number;
  heightPx: number;
  fps: number;
  frameCount: number;
  /** Full-resolution grey frames, `widthPx × heightPx` bytes each, evenly spread over the clip. */
  keyFrames: Buffer[];
  /** The same frames in colour at half size (RGB24, `⌊widthPx/2⌋ × ⌊heightPx/2⌋ × 3` bytes). */
  keyFramesRgbHalf: Buffer[];
  /** The frame index of each key frame. */
  keyFrameIndices: number[];
  /** Every frame as a `THUMB_WIDTH_PX × THUMB_HEIGHT_PX` grey thumbnail. */
  thumbnails: Buffer[];
}

/** Size, rate and length of a camera video. */
export interface VideoFormat {
  path: string;
  widthPx: number;
  heightPx: number;
  fps: number;
  frameCount: number;
}

/**
 * Probes a camera video.
 * @throws ValidationError `calibration_unreadable_camera` when it is not a video with frames.
 */
export async function probeCamera(path: string, signal?: AbortSignal): Promise<VideoFormat> {
  let probe: Awaited<ReturnType<typeof ffprobe>>;
  try {
    probe = await ffprobe(path, { signal });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ValidationError('calibration_unreadable_camera', `${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const video = probe.video;
  const frameCount = probe.frameCount ?? 0;
  if (!video?.width || !video.height || !video.fps || frameCount < 2) {
    throw new ValidationError(
      'calibration_unreadable_camera',
      `${path} has no video stream with at least 2 frames (self-calibration needs a few seconds of footage)`,
    );
  }
  return { path, widthPx: video.width, heightPx: video.height, fps: video.fps, frameCount };
}

/**
 * Decodes `keyFrameCount` full frames (evenly spaced) and all thumbnails of a video.
 * @throws PolyvisionError `calibration_decode_failed` with ffmpeg's message; `aborted`.
 */
export async function readVideoSamples(
  format: VideoFormat,
  options: { keyFrameCount?: number; signal?: AbortSignal; ffmpegPath?: string } = {},
): Promise<VideoSamples> {
  const keyFrameCount = Math.max(1, Math.min(options.keyFrameCount ?? 7, format.frameCount));
  const step = Math.max(1, Math.floor(format.frameCount / keyFrameCount));
  const dir = await mkdtemp(join(tmpdir(), 'pv-calib-'));
  try {
    const lo = join(dir, 'thumbs.gray');
    const hi = join(dir, 'keys.gray');
    const mid = join(dir, 'keys.rgb');
    const select = `select='not(mod(n\\,${step}))*lt(n\\,${step * keyFrameCount})'`;
    const child = spawnChild(
      options.ffmpegPath ?? resolveFfmpegPath(),
      [
        '-hide_banner',
        '-nostdin',
        '-loglevel',
        'error',
        '-i',
        format.path,
        '-filter_complex',
        `[0:v]split=2[a][b];[a]scale=${THUMB_WIDTH_PX}:${THUMB_HEIGHT_PX}:flags=area,format=gray[lo];` +
          `[b]${select},split=2[c][d];[c]format=gray[hi];[d]scale=${Math.floor(format.widthPx / 2)}:${Math.floor(format.heightPx / 2)}:flags=area,format=rgb24[mid]`,
        '-map',
        '[lo]',
        '-f',
        'rawvideo',
        '-y',
        lo,
        '-map',
        '[hi]',
        '-fps_mode',
        'passthrough',
        '-f',
        'rawvideo',
        '-y',
        hi,
        '-map',
        '[mid]',
        '-fps_mode',
        'passthrough',
        '-f',
        'rawvideo',
        '-y',
        mid,
      ],
      { stdout: 'ignore', signal: options.signal, killTimeoutMs: 1_000 },
    );
    try {
      await child.done;
    } catch (error) {
      if (error instanceof PolyvisionError && error.code === 'child_failed') {
        throw new PolyvisionError('calibration_decode_failed', `decoding ${format.path} failed: ${error.message}`, {
          cause: error,
        });
      }
      throw error;
    }
    const thumbBytes = THUMB_WIDTH_PX * THUMB_HEIGHT_PX;
    const frameBytes = format.widthPx * format.heightPx;
    const halfBytes = Math.floor(format.widthPx / 2) * Math.floor(format.heightPx / 2) * 3;
    const thumbs = await readFile(lo);
    const keys = await readFile(hi);
    const colour = await readFile(mid);
    const thumbnails: Buffer[] = [];
    for (let o = 0; o + thumbBytes <= thumbs.length; o += thumbBytes)
      thumbnails.push(thumbs.subarray(o, o + thumbBytes));
    const keyFrames: Buffer[] = [];
    for (let o = 0; o + frameBytes <= keys.length; o += frameBytes) keyFrames.push(keys.subarray(o, o + frameBytes));
    const keyFramesRgbHalf: Buffer[] = [];
    for (let o = 0; o + halfBytes <= colour.length; o += halfBytes)
      keyFramesRgbHalf.push(colour.subarray(o, o + halfBytes));
    if (keyFrames.length === 0 || keyFramesRgbHalf.length !== keyFrames.length) {
      throw new PolyvisionError('calibration_decode_failed', `${format.path}: ffmpeg decoded no frame`);
    }
    return {
      ...format,
      frameCount: thumbnails.length,
      keyFrames,
      keyFramesRgbHalf,
      keyFrameIndices: keyFrames.map((_, i) => i * step),
      thumbnails,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
