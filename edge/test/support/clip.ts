/**
 * Small synthetic clips for edge tests (shared/src/synthetic): 3 cameras of
 * 320×180, a couple of seconds, in a fresh temporary folder.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateMatch, type SynthOptions, type VenueCalibration, venueCalibrationSchema } from '@polyvision/shared';

export interface TestClip {
  dir: string;
  venue: VenueCalibration;
  cameraPaths: string[];
  panoramaPath: string;
  remove(): Promise<void>;
}

/** Generates a clip; `remove()` deletes its folder. */
export async function makeClip(options: Partial<SynthOptions> = {}): Promise<TestClip> {
  const dir = await mkdtemp(join(tmpdir(), 'edge-clip-'));
  const manifest = await generateMatch({
    cameras: 3,
    durationS: 2,
    widthPx: 320,
    heightPx: 180,
    panoramaVideo: true,
    gopFrames: 25,
    ...options,
    outDir: dir,
  });
  const venue = venueCalibrationSchema.parse(JSON.parse(await readFile(join(dir, 'venue.json'), 'utf8')));
  return {
    dir,
    venue,
    cameraPaths: Array.from({ length: manifest.cameras }, (_, i) => join(dir, `camera-${i}.mp4`)),
    panoramaPath: join(dir, 'panorama.mp4'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
