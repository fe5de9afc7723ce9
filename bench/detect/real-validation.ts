/**
 * The real validation frames the detector benches score on: the held-out matches 121364, 54745b and 573e61
 * of ../shared/datasets/football-players-detection (51 frames of 1920×1080, whole matches the training never
 * saw), their YOLO labels gathered in one folder for `polyvision eval detections`, and a frame decoder.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BgrImage } from '../../core/src/workers/detect/index.ts';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The labelled set beside the repository. */
export const DATASET = join(root, '..', 'shared', 'datasets', 'football-players-detection');
/** The matches the detector's training holds out. */
export const VALIDATION_MATCHES = ['121364', '54745b', '573e61'];

/**
 * The validation frames (JPEG names, sorted: frame i of a predictions file is the i-th) with their labels
 * copied to `labelsDir`; exits the process (code 0, a `skipped:` line) when the set is not beside the repository.
 */
export async function validationFrames(labelsDir: string): Promise<string[]> {
  if (!existsSync(join(DATASET, 'images'))) {
    process.stdout.write(`skipped: ${join(DATASET, 'images')} is missing\n`);
    process.exit(0);
  }
  await mkdir(labelsDir, { recursive: true });
  const images = (await readdir(join(DATASET, 'images')))
    .filter((f) => VALIDATION_MATCHES.includes(f.split('_')[0] as string) && f.endsWith('.jpg'))
    .sort();
  for (const image of images) {
    const label = image.replace(/\.jpg$/, '.txt');
    await copyFile(join(DATASET, 'labels', label), join(labelsDir, label));
  }
  return images;
}

/** A frame of the set (`image`: its JPEG name) decoded by ffmpeg to BGR at `width × height` (area scaling). */
export async function decodeFrame(image: string, width: number, height: number): Promise<BgrImage> {
  const { stdout } = await exec(
    'ffmpeg',
    [
      '-v',
      'error',
      '-i',
      join(DATASET, 'images', image),
      '-vf',
      `scale=${width}:${height}:flags=area,format=bgr24`,
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  return { width, height, data: stdout };
}
