import { z } from 'zod';
import { PolyvisionError } from '../errors/index.ts';
import { spawnChild } from '../process/index.ts';
import { resolveFfprobePath } from './ffmpeg-path.ts';

const numeric = z
  .union([z.number(), z.string()])
  .optional()
  .transform((v) => (v === undefined ? undefined : Number(v)));

const streamSchema = z.looseObject({
  index: z.number(),
  codec_type: z.string().optional(),
  codec_name: z.string().optional(),
  width: z.number().optional(),
  height: z.number().optional(),
  pix_fmt: z.string().optional(),
  r_frame_rate: z.string().optional(),
  avg_frame_rate: z.string().optional(),
  duration: numeric,
  nb_frames: numeric,
  nb_read_packets: numeric,
  sample_rate: numeric,
  channels: z.number().optional(),
});

const probeSchema = z.object({
  streams: z.array(streamSchema).default([]),
  format: z
    .looseObject({
      format_name: z.string().optional(),
      duration: numeric,
      size: numeric,
      bit_rate: numeric,
      nb_streams: z.number().optional(),
    })
    .optional(),
});

/** One stream as ffprobe reports it, numbers parsed. */
export type ProbeStream = z.infer<typeof streamSchema> & {
  /** Frames per second from `avg_frame_rate` (or `r_frame_rate`), when it is a video stream. */
  fps?: number;
  /** Packets counted by `-count_packets` (for video, one per frame). */
  packetCount?: number;
};

/** What {@link ffprobe} returns. */
export interface ProbeResult {
  streams: ProbeStream[];
  /** Container format (`mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`, …). */
  formatName?: string;
  /** Container duration in seconds. */
  durationSeconds?: number;
  sizeBytes?: number;
  /** The first video stream, if any. */
  video?: ProbeStream;
  /** Frames of the first video stream, counted (`-count_packets`), not estimated. */
  frameCount?: number;
  /** ffprobe's JSON as parsed. */
  raw: unknown;
}

function parseRate(rate: string | undefined): number | undefined {
  if (!rate) return undefined;
  const [num, den] = rate.split('/').map(Number);
  if (num === undefined || !Number.isFinite(num)) return undefined;
  if (den === undefined) return num;
  return den > 0 && num > 0 ? num / den : undefined;
}

/**
 * Runs `ffprobe -v error -print_format json -show_format -show_streams
 * -count_packets <file>` and parses it. Packet counting reads the whole
 * container (demux only, no decode): fast, exact for frame counts.
 *
 * @param options.signal - kills ffprobe when aborted.
 * @param options.timeoutMs - kills ffprobe after this long. @defaultValue 60_000
 * @throws PolyvisionError `ffprobe_not_found`; `probe_failed` (not a media file,
 *   missing, unreadable; message has ffprobe's stderr); `probe_timeout`; `aborted`.
 */
export async function ffprobe(
  file: string,
  options: { signal?: AbortSignal; timeoutMs?: number; ffprobePath?: string } = {},
): Promise<ProbeResult> {
  const ffprobePath = options.ffprobePath ?? resolveFfprobePath();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const run = spawnChild(
    ffprobePath,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-count_packets', '--', file],
    { signal, killTimeoutMs: 1_000 },
  );
  const chunks: Buffer[] = [];
  run.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  try {
    await run.done;
  } catch (error) {
    if (timeout.aborted && !options.signal?.aborted) {
      throw new PolyvisionError('probe_timeout', `ffprobe of ${file} took longer than ${timeoutMs} ms`, {
        retriable: true,
        cause: error,
      });
    }
    if (error instanceof PolyvisionError && error.code === 'child_failed') {
      throw new PolyvisionError('probe_failed', `ffprobe cannot read ${file}: ${run.stderrTail().join(' ')}`, {
        cause: error,
        details: { file, stderr_tail: run.stderrTail() },
      });
    }
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new PolyvisionError('probe_failed', `ffprobe printed no JSON for ${file}`, { cause: error });
  }
  const parsed = probeSchema.parse(raw);
  const streams: ProbeStream[] = parsed.streams.map((s) => ({
    ...s,
    fps: s.codec_type === 'video' ? (parseRate(s.avg_frame_rate) ?? parseRate(s.r_frame_rate)) : undefined,
    packetCount: s.nb_read_packets,
  }));
  const video = streams.find((s) => s.codec_type === 'video');
  return {
    streams,
    formatName: parsed.format?.format_name,
    durationSeconds: parsed.format?.duration ?? video?.duration,
    sizeBytes: parsed.format?.size,
    video,
    frameCount: video?.packetCount ?? video?.nb_frames,
    raw,
  };
}
