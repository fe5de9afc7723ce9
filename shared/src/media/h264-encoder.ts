import { type Logger, silentLogger } from '../logging/index.ts';
import { spawnChild } from '../process/index.ts';
import { resolveFfmpegPath } from './ffmpeg-path.ts';

/** The H.264 encoders Polyvision uses: NVIDIA NVENC where it works, x264 on CPU otherwise. */
export type H264Encoder = 'h264_nvenc' | 'libx264';

let cached: Promise<H264Encoder> | undefined;

/**
 * Whether `encoder` really works here: a 1-frame test encode
 * (`-f lavfi -i color=…:s=256x256 -frames:v 1 -c:v <encoder> -f null -`).
 * Listing `ffmpeg -encoders` is not enough: Debian's ffmpeg lists
 * h264_nvenc even without an NVIDIA driver. 256×256 because NVENC rejects
 * frames smaller than its minimum (145×49 on some GPUs).
 */
export async function canEncode(
  encoder: string,
  options: { ffmpegPath?: string; timeoutMs?: number } = {},
): Promise<boolean> {
  const run = spawnChild(
    options.ffmpegPath ?? resolveFfmpegPath(),
    [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=black:s=256x256:r=25',
      '-frames:v',
      '1',
      '-c:v',
      encoder,
      '-f',
      'null',
      '-',
    ],
    { stdout: 'ignore', signal: AbortSignal.timeout(options.timeoutMs ?? 15_000), killTimeoutMs: 1_000 },
  );
  try {
    await run.done;
    return true;
  } catch {
    return false;
  }
}

/**
 * Picks the H.264 encoder once per process: `h264_nvenc` when a test encode
 * succeeds (a GPU with a driver), else `libx264`; logs the choice and why.
 * `POLYVISION_H264_ENCODER=libx264|h264_nvenc` forces it (no probing).
 *
 * @param options.refresh - probe again instead of using the cached answer.
 */
export function detectH264Encoder(
  options: { logger?: Logger; refresh?: boolean; ffmpegPath?: string } = {},
): Promise<H264Encoder> {
  if (cached && !options.refresh) return cached;
  const logger = options.logger ?? silentLogger;
  cached = (async () => {
    const forced = process.env.POLYVISION_H264_ENCODER;
    if (forced === 'libx264' || forced === 'h264_nvenc') {
      logger.info({ encoder: forced, reason: 'POLYVISION_H264_ENCODER' }, 'h264 encoder forced');
      return forced;
    }
    const nvenc = await canEncode('h264_nvenc', { ffmpegPath: options.ffmpegPath });
    const encoder: H264Encoder = nvenc ? 'h264_nvenc' : 'libx264';
    logger.info(
      { encoder, reason: nvenc ? 'h264_nvenc test encode succeeded' : 'h264_nvenc test encode failed; CPU fallback' },
      'h264 encoder selected',
    );
    return encoder;
  })();
  return cached;
}
