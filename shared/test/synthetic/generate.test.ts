import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type VenueCalibration, venueCalibrationSchema } from '../../src/contracts/venue-calibration.ts';
import { ffprobe, resolveFfmpegPath } from '../../src/media/index.ts';
import { spawnChild, trackedChildCount } from '../../src/process/index.ts';
import {
  applyHomography,
  BALL_RADIUS_M,
  cameraFromCalibration,
  generateMatch,
  mat3FromRows,
  mat3Invert,
  type PinholeCamera,
  projectPoint,
  type SynthManifest,
} from '../../src/synthetic/index.ts';

interface MotRow {
  frame: number;
  id: number;
  left: number;
  top: number;
  width: number;
  height: number;
  classId: number;
  visibility: number;
}

interface PositionRow {
  frame: number;
  id: number;
  cls: string;
  x: number;
  y: number;
  z: number;
}

function parseMot(text: string): MotRow[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const c = line.split(',').map(Number);
      return {
        frame: c[0],
        id: c[1],
        left: c[2],
        top: c[3],
        width: c[4],
        height: c[5],
        classId: c[7],
        visibility: c[8],
      } as MotRow;
    });
}

function parsePositions(text: string): PositionRow[] {
  return text
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => {
      const c = line.split(',');
      return {
        frame: Number(c[0]),
        id: Number(c[2]),
        cls: c[3] as string,
        x: Number(c[5]),
        y: Number(c[6]),
        z: Number(c[7]),
      };
    });
}

const OPTIONS = { cameras: 3, durationS: 2, fps: 10, widthPx: 640, heightPx: 360, seed: 11, panoramaVideo: true };
let dir: string;
let out: string;
let manifest: SynthManifest;
let venue: VenueCalibration;
let heights: Map<number, number>;
let positions: PositionRow[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-synth-'));
  out = join(dir, 'clip');
  manifest = await generateMatch({ ...OPTIONS, outDir: out });
  venue = venueCalibrationSchema.parse(JSON.parse(await readFile(join(out, 'venue.json'), 'utf8')));
  positions = parsePositions(await readFile(join(out, 'gt', 'positions.csv'), 'utf8'));
  const ids = (await readFile(join(out, 'gt', 'identities.csv'), 'utf8')).trim().split('\n').slice(1);
  heights = new Map(ids.map((l) => [Number(l.split(',')[0]), Number(l.split(',')[4])]));
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every projected position (feet, mid-body, head for people; centre for the ball) that falls well inside the image lies in that object's box. */
async function checkProjectionsInBoxes(camera: PinholeCamera, motFile: string): Promise<number> {
  const rows = parseMot(await readFile(motFile, 'utf8'));
  const byKey = new Map(rows.map((r) => [`${r.frame}:${r.id}`, r]));
  let checked = 0;
  for (const p of positions) {
    const h = heights.get(p.id) ?? 0;
    const points: [number, number, number][] =
      p.cls === 'ball'
        ? [[p.x, p.y, p.z + BALL_RADIUS_M]]
        : [
            [p.x, p.y, 0],
            [p.x, p.y, h / 2],
            [p.x, p.y, h * 0.98],
          ];
    const projections = points.map((q) => projectPoint(camera, q));
    const inside = projections.every(
      (q) => q.depthM > 0 && q.u >= 2 && q.v >= 2 && q.u <= camera.widthPx - 2 && q.v <= camera.heightPx - 2,
    );
    if (!inside) continue;
    const box = byKey.get(`${p.frame}:${p.id}`);
    expect(box, `frame ${p.frame} id ${p.id} projects into the image but has no box`).toBeDefined();
    if (!box) continue;
    for (const q of projections) {
      expect(q.u).toBeGreaterThanOrEqual(box.left - 0.01);
      expect(q.u).toBeLessThanOrEqual(box.left + box.width + 0.01);
      expect(q.v).toBeGreaterThanOrEqual(box.top - 0.01);
      expect(q.v).toBeLessThanOrEqual(box.top + box.height + 0.01);
    }
    checked++;
  }
  return checked;
}

describe('generateMatch', () => {
  it('writes every file with the manifest last and right frame counts', async () => {
    const names = (await readdir(out)).sort();
    expect(names).toEqual([
      'camera-0.mp4',
      'camera-1.mp4',
      'camera-2.mp4',
      'gt',
      'manifest.json',
      'panorama.mp4',
      'venue.json',
    ]);
    expect(manifest.frame_count).toBe(20);
    const onDisk = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8')) as SynthManifest;
    expect(onDisk.files.map((f) => f.path).sort()).toEqual(manifest.files.map((f) => f.path).sort());
    for (const name of ['camera-0', 'camera-1', 'camera-2', 'panorama']) {
      const probe = await ffprobe(join(out, `${name}.mp4`));
      expect(probe.frameCount, name).toBe(20);
      expect(probe.video?.codec_name).toBe('h264');
      const expected = name === 'panorama' ? venue.panorama : venue.cameras.find((c) => c.id === name);
      expect(probe.video?.width).toBe(expected?.width_px);
      expect(probe.video?.height).toBe(expected?.height_px);
    }
    expect(positions.length).toBe(20 * 24);
  });

  it('puts every camera-visible position inside its stored box (camera model from venue.json)', async () => {
    let total = 0;
    for (const entry of venue.cameras)
      total += await checkProjectionsInBoxes(cameraFromCalibration(entry), join(out, 'gt', `${entry.id}.mot.txt`));
    total += await checkProjectionsInBoxes(cameraFromCalibration(venue.panorama), join(out, 'gt', 'panorama.mot.txt'));
    // 20 frames × 24 objects seen by at least one camera and the panorama.
    expect(total).toBeGreaterThan(20 * 24);
  });

  it('homographies map shared pitch points between cameras within 1 px', () => {
    const panoFromPitch = mat3FromRows(venue.panorama.pitch_to_panorama);
    const pitchFromPano = mat3FromRows(venue.panorama.panorama_to_pitch);
    let pairs = 0;
    for (let x = -52.5; x <= 52.5; x += 7.5) {
      for (let y = -34; y <= 34; y += 8.5) {
        const seen = venue.cameras
          .map((c) => ({ c, cam: cameraFromCalibration(c), uv: applyHomography(mat3FromRows(c.pitch_to_image), x, y) }))
          .filter(({ c, uv }) => uv[0] >= 0 && uv[1] >= 0 && uv[0] <= c.width_px - 1 && uv[1] <= c.height_px - 1);
        for (const s of seen) {
          // The homography agrees with the full camera model.
          const q = projectPoint(s.cam, [x, y, 0]);
          expect(Math.hypot(q.u - s.uv[0], q.v - s.uv[1])).toBeLessThan(1e-6);
          // Camera → panorama agrees with pitch → panorama, and back to the pitch.
          const viaCamera = applyHomography(mat3FromRows(s.c.image_to_panorama), s.uv[0], s.uv[1]);
          const direct = applyHomography(panoFromPitch, x, y);
          expect(Math.hypot(viaCamera[0] - direct[0], viaCamera[1] - direct[1])).toBeLessThan(1);
          const back = applyHomography(pitchFromPano, direct[0], direct[1]);
          expect(Math.hypot(back[0] - x, back[1] - y)).toBeLessThan(1e-6);
        }
        for (const a of seen) {
          for (const b of seen) {
            if (a === b) continue;
            const pano = applyHomography(mat3FromRows(a.c.image_to_panorama), a.uv[0], a.uv[1]);
            const inB = applyHomography(mat3Invert(mat3FromRows(b.c.image_to_panorama)), pano[0], pano[1]);
            expect(Math.hypot(inB[0] - b.uv[0], inB[1] - b.uv[1])).toBeLessThan(1);
            pairs++;
          }
        }
      }
    }
    expect(pairs).toBeGreaterThan(10);
  });

  it('draws the people where their boxes are (decoded video differs from the grass inside the box)', async () => {
    const entry = venue.cameras[1];
    if (!entry) throw new Error('no camera 1');
    const rows = parseMot(await readFile(join(out, 'gt', `${entry.id}.mot.txt`), 'utf8')).filter(
      (r) => r.frame === 1 && r.classId !== 4 && r.visibility === 1 && r.height >= 8,
    );
    expect(rows.length).toBeGreaterThan(3);
    const ffmpeg = spawnChild(resolveFfmpegPath(), [
      '-v',
      'error',
      '-i',
      join(out, `${entry.id}.mp4`),
      '-frames:v',
      '1',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-',
    ]);
    const chunks: Buffer[] = [];
    ffmpeg.stdout?.on('data', (c: Buffer) => chunks.push(c));
    await ffmpeg.done;
    const rgb = Buffer.concat(chunks);
    expect(rgb.length).toBe(entry.width_px * entry.height_px * 3);
    const px = (u: number, v: number): [number, number, number] => {
      const i = (Math.round(v) * entry.width_px + Math.round(u)) * 3;
      return [rgb[i] as number, rgb[i + 1] as number, rgb[i + 2] as number];
    };
    for (const r of rows) {
      // Grass reference: the pixel 3 px left of the box at mid-height.
      const grass = px(Math.max(0, r.left - 3), r.top + r.height / 2);
      let different = 0;
      let n = 0;
      // A row shows the person when some pixel of it differs clearly from the grass.
      for (let v = Math.ceil(r.top); v < r.top + r.height - 1; v++) {
        let hit = false;
        for (let u = Math.ceil(r.left); u < r.left + r.width - 1 && !hit; u++) {
          const g = px(u, v);
          hit = Math.abs(g[0] - grass[0]) + Math.abs(g[1] - grass[1]) + Math.abs(g[2] - grass[2]) > 60;
        }
        if (hit) different++;
        n++;
      }
      expect(different / n, `id ${r.id}`).toBeGreaterThan(0.8);
      // And just outside the box, above the head, is not the person.
      const above = px(r.left + r.width / 2, Math.max(0, r.top - 3));
      expect(Math.abs(above[1] - grass[1])).toBeLessThan(60);
    }
  });

  it('is deterministic for a seed: same positions again, others for another seed', async () => {
    const again = join(dir, 'again');
    await generateMatch({ ...OPTIONS, cameras: 1, widthPx: 128, heightPx: 72, panoramaVideo: false, outDir: again });
    const a = await readFile(join(out, 'gt', 'positions.csv'), 'utf8');
    expect(await readFile(join(again, 'gt', 'positions.csv'), 'utf8')).toBe(a);
    const other = join(dir, 'other');
    await generateMatch({
      ...OPTIONS,
      seed: 12,
      cameras: 1,
      widthPx: 128,
      heightPx: 72,
      panoramaVideo: false,
      outDir: other,
    });
    expect(await readFile(join(other, 'gt', 'positions.csv'), 'utf8')).not.toBe(a);
  });
});

describe('generateMatch bad input', () => {
  it.each([
    [{ cameras: 0 }, 'cameras'],
    [{ durationS: -1 }, 'durationS'],
    [{ widthPx: 321 }, 'widthPx'],
    [{ heightPx: 181 }, 'heightPx'],
    [{ fps: 0 }, 'fps'],
  ])('refuses %j before any work', async (bad, option) => {
    const target = join(dir, `bad-${option}`);
    await expect(generateMatch({ ...OPTIONS, ...bad, outDir: target })).rejects.toMatchObject({
      code: 'synth_invalid_option',
      details: { option },
    });
    await expect(readdir(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses an output folder that cannot be created', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    await expect(generateMatch({ ...OPTIONS, outDir: join(file, 'clip') })).rejects.toMatchObject({
      code: 'synth_output_unwritable',
    });
  });

  it('reports an encoder that fails, leaving nothing behind', async () => {
    const target = join(dir, 'encoder-fails');
    await expect(generateMatch({ ...OPTIONS, outDir: target }, { ffmpegPath: '/bin/false' })).rejects.toMatchObject({
      code: 'child_failed',
    });
    expect(await readdir(target)).toEqual([]);
  });

  it('leaves no finished-looking file and no ffmpeg behind when aborted', async () => {
    const target = join(dir, 'aborted');
    const controller = new AbortController();
    const run = generateMatch(
      { ...OPTIONS, durationS: 30, outDir: target },
      { signal: controller.signal, onProgress: (done) => done === 5 && controller.abort(new Error('test abort')) },
    );
    await expect(run).rejects.toMatchObject({ code: 'aborted' });
    expect(await readdir(target)).toEqual([]);
    expect(trackedChildCount()).toBe(0);
  });
});
