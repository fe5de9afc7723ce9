/**
 * Synthetic clips for the edge benchmarks, generated once into the temp
 * folder and reused while their manifest.json exists.
 */
import { access, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateMatch, type VenueCalibration, venueCalibrationSchema } from '../../shared/src/index.ts';

export interface BenchClip {
  dir: string;
  venue: VenueCalibration;
  cameraPaths: string[];
  panoramaPath: string | null;
  frames: number;
}

export async function benchClip(options: {
  cameras: number;
  widthPx: number;
  heightPx: number;
  durationS: number;
  panoramaVideo?: boolean;
}): Promise<BenchClip> {
  const key = `${options.cameras}x${options.widthPx}x${options.heightPx}-${options.durationS}s${options.panoramaVideo ? '-pano' : ''}`;
  const dir = join(tmpdir(), 'polyvision-bench-edge-clips', key);
  const manifestPath = join(dir, 'manifest.json');
  const exists = await access(manifestPath).then(
    () => true,
    () => false,
  );
  if (!exists) {
    process.stderr.write(`generating synthetic clip ${key} …\n`);
    await generateMatch({ ...options, outDir: dir, gopFrames: 25, preset: 'veryfast', crf: 18 });
  }
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { frame_count: number };
  const venue = venueCalibrationSchema.parse(JSON.parse(await readFile(join(dir, 'venue.json'), 'utf8')));
  return {
    dir,
    venue,
    cameraPaths: venue.cameras.map((c) => join(dir, `${c.id}.mp4`)),
    panoramaPath: options.panoramaVideo ? join(dir, 'panorama.mp4') : null,
    frames: manifest.frame_count,
  };
}
