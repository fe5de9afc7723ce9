import { extname } from 'node:path';
import { PolyvisionError, resolveFfmpegPath, spawnChild } from '@polyvision/shared';

/** Whether a camera file must be converted before it can be the demo's panorama.mp4 (not an .mp4). */
export function needsMp4Conversion(path: string): boolean {
  return extname(path).toLowerCase() !== '.mp4';
}

/**
 * Converts one camera video in another container (.avi, .mkv, .mov, …) to
 * H.264 MP4 with ffmpeg (first video stream, yuv420p, `-crf 18`, faststart),
 * so the pipeline receives what an edge node sends. The ffmpeg child dies
 * with its owner and with `signal`.
 *
 * @throws PolyvisionError `demo_input_unreadable` (not retriable) with ffmpeg's last error line.
 */
export async function convertToMp4(inputPath: string, outputPath: string, signal?: AbortSignal): Promise<void> {
  const run = spawnChild(
    resolveFfmpegPath(),
    [
      '-nostdin',
      '-v',
      'error',
      '-y',
      '-i',
      inputPath,
      '-map',
      '0:v:0',
      '-an',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '18',
      '-pix_fmt',
      'yuv420p',
      '-movflags',
      '+faststart',
      outputPath,
    ],
    { signal, stdout: 'ignore' },
  );
  try {
    await run.done;
  } catch (error) {
    signal?.throwIfAborted();
    throw new PolyvisionError(
      'demo_input_unreadable',
      `cannot convert ${inputPath} to MP4: ${run.stderrTail().at(-1) ?? (error as Error).message}`,
      { cause: error },
    );
  }
}
