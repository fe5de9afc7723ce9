import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { H264Encoder, Logger, SegmentRef } from '@polyvision/shared';
import { detectH264Encoder, PolyvisionError, resolveFfmpegPath, silentLogger, spawnChild } from '@polyvision/shared';
import { type MediaBinaries, probeVideo } from '../detect/frames/index.ts';
import { segmentStartS } from '../segment/segment-clock.ts';

/** One H.264 rendition of the ladder. */
export interface Rendition {
  /** Name used in paths and the master playlist (`1080p`). */
  name: string;
  height: number;
  /** Target video bitrate, bits per second. */
  videoBitrate: number;
}

/** The default ladder (Apple HLS authoring spec, 16:9 rungs). */
export const DEFAULT_RENDITIONS: readonly Rendition[] = Object.freeze([
  { name: '1080p', height: 1080, videoBitrate: 6_000_000 },
  { name: '720p', height: 720, videoBitrate: 3_000_000 },
  { name: '480p', height: 480, videoBitrate: 1_200_000 },
]);

/** Parameters of {@link encodeHls}. */
export interface EncodeHlsParams {
  inputPath: string;
  /** Folder to create with `master.m3u8`, `<name>/index.m3u8` + segments, `poster.jpg`; must not exist yet. */
  outputDir: string;
  /** Rungs taller than the source are dropped (a source below every rung gets one rung at its own height). @defaultValue DEFAULT_RENDITIONS */
  renditions?: readonly Rendition[];
  /** Target segment length, seconds; keyframes are forced on segment boundaries. @defaultValue 4 */
  segmentSeconds?: number;
  encoder?: H264Encoder;
  /** libx264 preset (speed against quality at the same bitrate; bench/README.md). @defaultValue `superfast` */
  x264Preset?: 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium';
  /**
   * The match segment this video is (`task.segment`): every output timestamp is moved to the match
   * clock (`-output_ts_offset` = `segmentStartS` of the segment and this video's probed duration), so
   * appended to the match playlist its renditions continue the previous segment's without a
   * discontinuity. Absent: timestamps from 0.
   */
  segment?: SegmentRef;
  signal?: AbortSignal;
  /** Share of the media time encoded, in [0, 1]. */
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
  logger?: Logger;
  /** Shorter inputs are refused (`clip_too_short`). @defaultValue 1000 */
  minDurationMs?: number;
}

/** What {@link encodeHls} wrote (paths relative to `outputDir`). */
export interface EncodeHlsSummary {
  outputDir: string;
  masterPlaylist: string;
  renditions: {
    name: string;
    width: number;
    height: number;
    videoBitrate: number;
    playlist: string;
    segments: number;
  }[];
  poster: string;
  encoder: H264Encoder;
  elapsedMs: number;
  /** Source frames encoded per second of wall time (all rungs together). */
  framesPerSecond: number;
}

/**
 * Encodes H.264 renditions in one ffmpeg pass (decode once, `split`, scale
 * per rung) into an HLS VOD presentation (RFC 8216): a master playlist, one
 * media playlist per rung with aligned segments, and a poster JPEG from a
 * third of the way in. NVENC when it encodes here, libx264 otherwise. Written
 * into a temporary folder renamed into place when complete.
 *
 * @throws PolyvisionError (not retriable): `input_not_video`, `clip_too_short`,
 *   `encode_options_invalid`, `output_exists`; `encode_failed` (ffmpeg failed;
 *   not retriable: the same input fails again).
 */
export async function encodeHls(params: EncodeHlsParams): Promise<EncodeHlsSummary> {
  const started = performance.now();
  const { signal } = params;
  const ffmpeg = params.binaries?.ffmpegPath ?? resolveFfmpegPath();
  const segmentSeconds = params.segmentSeconds ?? 4;
  if (!(segmentSeconds >= 1 && segmentSeconds <= 30)) {
    throw new PolyvisionError('encode_options_invalid', `segmentSeconds must be in [1, 30], got ${segmentSeconds}`);
  }
  const info = await probeVideo(params.inputPath, {
    signal,
    binaries: params.binaries,
    minDurationMs: params.minDurationMs ?? 1000,
  });
  const ladder = [...(params.renditions ?? DEFAULT_RENDITIONS)].sort((a, b) => b.height - a.height);
  if (ladder.length === 0) throw new PolyvisionError('encode_options_invalid', 'at least one rendition is needed');
  const fitting = ladder.filter((r) => r.height <= info.height);
  // A source smaller than every rung is encoded once at its own height (never upscaled).
  const smallest = ladder.at(-1)!;
  const rungs =
    fitting.length > 0
      ? fitting
      : [{ name: `${info.height}p`, height: info.height, videoBitrate: smallest.videoBitrate }];
  const exists = await readdir(params.outputDir).then(
    () => true,
    () => false,
  );
  if (exists) throw new PolyvisionError('output_exists', `${params.outputDir} already exists`);
  const encoder = params.encoder ?? (await detectH264Encoder({ logger: params.logger ?? silentLogger }));
  const work = `${params.outputDir}.${process.pid}.${Date.now()}.part`;
  await mkdir(work, { recursive: true });
  const gop = Math.max(1, Math.round(info.fps * segmentSeconds));
  const filter = `[0:v]split=${rungs.length}${rungs.map((_, i) => `[s${i}]`).join('')};${rungs
    .map((r, i) => `[s${i}]scale=-2:${r.height}:flags=lanczos,format=yuv420p[v${i}]`)
    .join(';')}`;
  const args = ['-nostdin', '-v', 'error', '-i', params.inputPath, '-filter_complex', filter];
  rungs.forEach((r, i) => {
    args.push('-map', `[v${i}]`);
    if (info.hasAudio) args.push('-map', '0:a:0');
    args.push(`-b:v:${i}`, String(r.videoBitrate), `-maxrate:v:${i}`, String(Math.round(r.videoBitrate * 1.07)));
    args.push(`-bufsize:v:${i}`, String(Math.round(r.videoBitrate * 1.5)));
  });
  if (encoder === 'h264_nvenc') args.push('-c:v', 'h264_nvenc', '-preset', 'p4');
  else args.push('-c:v', 'libx264', '-preset', params.x264Preset ?? 'superfast', '-profile:v', 'high');
  const offsetS = segmentStartS(params.segment, info.durationMs / 1000);
  if (offsetS) args.push('-output_ts_offset', offsetS.toFixed(6));
  args.push(
    '-g',
    String(gop),
    '-keyint_min',
    String(gop),
    '-sc_threshold',
    '0',
    '-force_key_frames',
    `expr:gte(t,n_forced*${segmentSeconds})`,
  );
  if (info.hasAudio) args.push('-c:a', 'aac', '-b:a', '128k', '-ac', '2');
  const streamMap = rungs.map((r, i) => (info.hasAudio ? `v:${i},a:${i},name:${r.name}` : `v:${i},name:${r.name}`));
  args.push(
    '-f',
    'hls',
    '-hls_time',
    String(segmentSeconds),
    '-hls_playlist_type',
    'vod',
    '-hls_segment_type',
    'mpegts',
    '-hls_segment_filename',
    join(work, '%v', 'segment_%05d.ts'),
    '-master_pl_name',
    'master.m3u8',
    '-var_stream_map',
    streamMap.join(' '),
    '-progress',
    'pipe:1',
    '-nostats',
    join(work, '%v', 'index.m3u8'),
  );
  try {
    for (const r of rungs) await mkdir(join(work, r.name), { recursive: true });
    const run = spawnChild(ffmpeg, args, { signal, killTimeoutMs: 1000 });
    run.done.catch(() => {});
    let buffered = '';
    run.stdout?.setEncoding('utf8');
    run.stdout?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^out_time_us=(\d+)/.exec(line);
        if (m) params.onProgress?.(Math.min(1, Number(m[1]) / 1000 / info.durationMs));
      }
    });
    try {
      await run.done;
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PolyvisionError('encode_failed', `HLS encode of ${params.inputPath} failed: ${String(cause)}`, {
        cause,
      });
    }
    const poster = spawnChild(
      ffmpeg,
      [
        '-nostdin',
        '-v',
        'error',
        '-ss',
        String((info.durationMs / 3000).toFixed(3)),
        '-i',
        params.inputPath,
        '-frames:v',
        '1',
        '-vf',
        `scale=-2:${Math.min(720, info.height)}`,
        '-q:v',
        '3',
        '-y',
        join(work, 'poster.jpg'),
      ],
      { signal, stdout: 'ignore', killTimeoutMs: 1000 },
    );
    try {
      await poster.done;
    } catch (cause) {
      signal?.throwIfAborted();
      throw new PolyvisionError('encode_failed', `poster of ${params.inputPath} failed: ${String(cause)}`, { cause });
    }
    const renditions = [];
    for (const r of rungs) {
      const files = await readdir(join(work, r.name));
      const width = Math.round((info.width * r.height) / info.height / 2) * 2;
      renditions.push({
        name: r.name,
        width,
        height: r.height,
        videoBitrate: r.videoBitrate,
        playlist: `${r.name}/index.m3u8`,
        segments: files.filter((f) => f.endsWith('.ts')).length,
      });
    }
    await rename(work, params.outputDir);
    params.onProgress?.(1);
    const elapsedMs = performance.now() - started;
    return {
      outputDir: params.outputDir,
      masterPlaylist: 'master.m3u8',
      renditions,
      poster: 'poster.jpg',
      encoder,
      elapsedMs,
      framesPerSecond: info.frameCount / (elapsedMs / 1000),
    };
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}
