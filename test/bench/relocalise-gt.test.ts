import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const tool = fileURLToPath(new URL('../../bench/label/relocalise-gt.ts', import.meta.url));

describe('bench/label/relocalise-gt.ts (box edges of a ground truth from the image)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'relocalise-gt-'));
    // A static "pitch" and a 20 × 50 px white "player" crossing it at 60 px/s: at t = 1 s (frame 25) it
    // covers x 100–120, y 80–130. Lossless, so its edges are where they were drawn.
    await exec('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=0x2e7d32:s=320x240:d=2:r=25',
      '-f',
      'lavfi',
      '-i',
      'color=c=white:s=20x50:d=2:r=25',
      '-filter_complex',
      "[0][1]overlay=x='40+t*60':y=80:shortest=1",
      '-c:v',
      'libx264rgb',
      '-qp',
      '0',
      join(dir, 'clip.mp4'),
    ]);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('re-draws a box that cut the player off, keeps one with nobody in it, passes ignore rows through', async () => {
    const rows = [
      '26,1,98,86,20,40,1,1,1', // the player, its feet cut off and 2 px to the left
      '26,2,250,150,20,50,1,1,1', // nobody there
      '26,-1,0,0,320,40,0,1,1', // an ignore region
    ];
    await writeFile(join(dir, 'gt.mot.txt'), `${rows.join('\n')}\n`);
    const out = join(dir, 'gt-silhouette.mot.txt');
    await exec(process.execPath, [
      tool,
      '--video',
      join(dir, 'clip.mp4'),
      '--gt',
      join(dir, 'gt.mot.txt'),
      '--out',
      out,
    ]);
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(3);
    const [frame, id, x, y, w, h] = lines[0]!.split(',').map(Number);
    expect([frame, id]).toEqual([26, 1]);
    // Edges within 1 px of where the player was drawn.
    const edges = [x!, y!, x! + w!, y! + h!];
    for (const [k, drawn] of [100, 80, 120, 130].entries()) expect(Math.abs(edges[k]! - drawn)).toBeLessThanOrEqual(1);
    expect(lines[1]).toBe(rows[1]);
    expect(lines[2]).toBe(rows[2]);
    const summary = JSON.parse(await readFile(join(dir, 'gt-silhouette.summary.json'), 'utf8'));
    expect(summary.counts).toMatchObject({ relocalised: 1, faint: 1, merged: 0 });
  });
});
