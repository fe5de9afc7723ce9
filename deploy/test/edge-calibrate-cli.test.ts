import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTracked } from '../../test/support/index.ts';

const CLI = new URL('../src/cli/main.ts', import.meta.url).pathname;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-calibrate-cli-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnTracked(process.execPath, [CLI, 'edge', 'calibrate', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

describe('polyvision edge calibrate', () => {
  it('prints its help', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/--cameras A,B/);
  }, 60_000);

  it('exits 2 naming the problem and writes no venue file for a black camera', async () => {
    const make = async (name: string, graph: string) => {
      const path = join(dir, `${name}.mp4`);
      await spawnChild(
        resolveFfmpegPath(),
        [
          '-v',
          'error',
          '-f',
          'lavfi',
          '-i',
          graph,
          '-t',
          '2',
          '-c:v',
          'libx264',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p',
          '-y',
          path,
        ],
        { stdout: 'ignore' },
      ).done;
      return path;
    };
    const moving = await make('moving', 'testsrc2=s=320x180:r=25');
    const black = await make('black', 'color=c=black:s=320x180:r=25');
    const out = join(dir, 'venue.json');
    const { code, stderr } = await run(['--cameras', `${moving},${black}`, '--out', out]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/\[calibration_camera_blank\] .*black\.mp4 shows no picture/);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.partial`)).toBe(false);
  }, 120_000);

  it('exits 2 on a pitch-points file or a preview name it cannot use, before calibrating, and writes no venue file', async () => {
    const points = join(dir, 'points.json');
    await writeFile(points, JSON.stringify({ points: [{ camera: 'a', image_px: [1, 2], pitch_m: [0, 0] }] }));
    const out = join(dir, 'venue-points.json');
    const { code, stderr } = await run(['--cameras', 'a.mp4,b.mp4', '--out', out, '--pitch-points', points]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/\[pitch_points_invalid\] .*points\.json: points: at least 4 pitch points/);
    expect(existsSync(out)).toBe(false);
    const gif = await run(['--cameras', 'a.mp4,b.mp4', '--out', out, '--preview', join(dir, 'still.gif')]);
    expect(gif.code).toBe(2);
    expect(gif.stderr).toMatch(/--preview .*still\.gif: expected a \.png or a \.jpg/);
  }, 60_000);
});
