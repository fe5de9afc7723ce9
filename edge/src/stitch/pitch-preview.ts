/**
 * A still of a venue's panorama with the pitch markings drawn where its calibration puts them: the
 * installer's check, by looking, that the pitch registration lies on the painted lines.
 */
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  PolyvisionError,
  pitchMappingOf,
  readFrames,
  resolveFfmpegPath,
  spawnChild,
  ValidationError,
  type VenueCalibration,
} from '@polyvision/shared';
import { createStitcher } from './stitcher.ts';

/** A polyline on the pitch, metres (the venue frame: origin the centre spot). */
export type PitchPolyline = readonly (readonly [number, number])[];

/**
 * The markings of a pitch of `length_m` × `width_m` as polylines in metres (IFAB Laws of the Game,
 * Law 1): the touchlines and goal lines, the halfway line, the centre circle (9.15 m), both penalty
 * areas (16.5 × 40.32 m) and goal areas (5.5 × 18.32 m).
 */
export function pitchMarkings(pitch: { length_m: number; width_m: number }): PitchPolyline[] {
  const L = pitch.length_m / 2;
  const W = pitch.width_m / 2;
  const box = (depth: number, halfWidth: number, side: 1 | -1): PitchPolyline => [
    [side * L, -halfWidth],
    [side * (L - depth), -halfWidth],
    [side * (L - depth), halfWidth],
    [side * L, halfWidth],
  ];
  const circle: [number, number][] = [];
  for (let k = 0; k <= 72; k++) {
    const a = (2 * Math.PI * k) / 72;
    circle.push([9.15 * Math.cos(a), 9.15 * Math.sin(a)]);
  }
  return [
    [
      [-L, -W],
      [L, -W],
      [L, W],
      [-L, W],
      [-L, -W],
    ],
    [
      [0, -W],
      [0, W],
    ],
    circle,
    box(16.5, 20.16, -1),
    box(16.5, 20.16, 1),
    box(5.5, 9.16, -1),
    box(5.5, 9.16, 1),
  ];
}

/**
 * Paints `lines` (metres) into an RGB24 image of the venue's panorama through its pitch mapping
 * (`pitchMappingOf`): each segment sampled every 5 cm, a square of `thicknessPx` per sample.
 * Nothing for a venue without a measured pitch frame: it does not know where the markings are.
 *
 * @returns pixels painted.
 */
export function drawPitchLines(
  rgb: Buffer,
  venue: VenueCalibration,
  lines: readonly PitchPolyline[],
  colour: readonly [number, number, number] = [255, 0, 255],
  thicknessPx = 2,
): number {
  const { width_px: width, height_px: height } = venue.panorama;
  const mapping = pitchMappingOf(venue);
  if (!mapping) return 0;
  const { toPanorama } = mapping;
  let painted = 0;
  const paint = (u: number, v: number) => {
    for (let dy = 0; dy < thicknessPx; dy++) {
      for (let dx = 0; dx < thicknessPx; dx++) {
        const x = Math.round(u) + dx - (thicknessPx >> 1);
        const y = Math.round(v) + dy - (thicknessPx >> 1);
        if (x < 0 || y < 0 || x >= width || y >= height) continue;
        const i = 3 * (y * width + x);
        rgb[i] = colour[0];
        rgb[i + 1] = colour[1];
        rgb[i + 2] = colour[2];
        painted++;
      }
    }
  };
  for (const line of lines) {
    for (let k = 1; k < line.length; k++) {
      const [ax, ay] = line[k - 1]!;
      const [bx, by] = line[k]!;
      const steps = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / 0.05));
      for (let s = 0; s <= steps; s++) {
        const at = toPanorama(ax + ((bx - ax) * s) / steps, ay + ((by - ay) * s) / steps);
        if (at) paint(at[0], at[1]);
      }
    }
  }
  return painted;
}

/**
 * Stitches the first frame of `cameraPaths` (venue order) with the venue's stitcher and writes it to
 * `outputPath` (PNG or JPEG by its extension; a temporary name, then renamed: never half-written)
 * with the pitch markings drawn in magenta (none without a registered pitch). The cameras are cut to their first second after their
 * time offsets (stream copy), so this takes seconds.
 *
 * @throws ValidationError `preview_format` for another extension; the stitcher's errors
 *   (`stitch_failed` with ffmpeg's last line for a camera that is not a video); PolyvisionError
 *   `preview_failed` when the stitched panorama has no frame, `child_failed` from ffmpeg.
 */
export async function writePitchPreview(
  venue: VenueCalibration,
  cameraPaths: readonly string[],
  outputPath: string,
  signal?: AbortSignal,
): Promise<void> {
  const ext = extname(outputPath).toLowerCase();
  const codec = ext === '.png' ? 'png' : ext === '.jpg' || ext === '.jpeg' ? 'mjpeg' : null;
  if (!codec) {
    throw new ValidationError('preview_format', `${outputPath}: the preview is a .png or a .jpg`);
  }
  const work = await mkdtemp(join(tmpdir(), 'pv-pitch-preview-'));
  const ffmpeg = resolveFfmpegPath();
  const partial = `${outputPath}.partial`;
  try {
    const cuts = await Promise.all(
      venue.cameras.map(async (camera, i) => {
        const out = join(work, `camera-${i}.mp4`);
        const seconds = String((camera.time_offset_s ?? 0) + 1);
        const args = ['-nostdin', '-v', 'error', '-i', cameraPaths[i]!, '-t', seconds, '-c', 'copy', '-an', '-y', out];
        await spawnChild(ffmpeg, args, { stdout: 'ignore', signal }).done;
        return { cameraId: camera.id, path: out };
      }),
    );
    const stitcher = await createStitcher(venue, { workDir: join(work, 'maps'), preset: 'ultrafast' });
    const panorama = join(work, 'panorama.mp4');
    await stitcher.stitch(cuts, panorama, signal);
    // The first frame through a pipe, drawn on, and back through a pipe into the image encoder.
    const { width_px: width, height_px: height } = venue.panorama;
    const toRaw = ['-nostdin', '-v', 'error', '-i', panorama, '-frames:v', '1'];
    const decode = spawnChild(ffmpeg, [...toRaw, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { signal });
    decode.done.catch(() => {});
    let rgb: Buffer | undefined;
    for await (const frame of readFrames(decode.stdout as Readable, width * height * 3)) rgb ??= frame;
    await decode.done;
    if (!rgb) throw new PolyvisionError('preview_failed', `the stitched panorama ${panorama} has no frame`);
    drawPitchLines(rgb, venue, pitchMarkings(venue.pitch));
    const fromRaw = ['-nostdin', '-v', 'error', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`];
    const encodeArgs = ['-i', 'pipe:0', '-frames:v', '1', '-c:v', codec, '-q:v', '3', '-f', 'image2', '-y', partial];
    const encode = spawnChild(ffmpeg, [...fromRaw, ...encodeArgs], { stdin: 'pipe', stdout: 'ignore', signal });
    encode.done.catch(() => {});
    await encode.write(rgb);
    await encode.end();
    await encode.done;
    await rename(partial, outputPath);
  } finally {
    await rm(partial, { force: true });
    await rm(work, { recursive: true, force: true });
  }
}
