import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
let dir: string;

const header = (width: number, height: number, fps = 25) => ({
  format: 'polyvision.detections',
  version: 1,
  source: { width, height, fps, frameCount: 50, durationMs: 2000 },
  analysisFps: fps,
  model: {
    version: 'fixture',
    sha256: '0'.repeat(64),
    layout: 'yolov8',
    inputWidth: 64,
    inputHeight: 64,
    executionProvider: 'cpu',
    tiles: 1,
  },
  classes: ['player', 'goalkeeper', 'referee', 'ball'],
});

/** Writes a tracks file of 5 frames analysed at 5 fps (a 200×100 source at 25 fps) and returns its path. */
async function tracksFile(name: string, tracks: object[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(
    path,
    JSON.stringify({
      format: 'polyvision.tracks',
      version: 1,
      detections: { ...header(200, 100), analysisFps: 5 },
      tracker: { name: 'fixture', options: {} },
      frameCount: 5,
      tracks,
    }),
  );
  return path;
}

async function evalCli(...args: string[]) {
  const { stdout } = await run(process.execPath, [MAIN, 'eval', ...args, '--json']);
  return JSON.parse(stdout);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-eval-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('polyvision eval detections', () => {
  it('scores a hand-made YOLO labels fixture per class, people merged, with AP50', async () => {
    // 1000×500 images. a: a player [450,200,550,300] and a ball [245,120,255,130]; b: a goalkeeper at the same place.
    const labels = join(dir, 'labels');
    await mkdir(labels);
    await writeFile(join(labels, 'a.txt'), '2 0.5 0.5 0.1 0.2\n0 0.25 0.25 0.01 0.02\n');
    await writeFile(join(labels, 'b.txt'), '1 0.5 0.5 0.1 0.2\n');
    const pred = join(dir, 'pred.jsonl');
    const frames = [
      {
        frame: 0,
        sourceFrame: 0,
        tMs: 0,
        detections: [
          { class: 'player', score: 0.9, box: [450, 200, 550, 300] },
          { class: 'ball', score: 0.8, box: [600, 400, 610, 410] },
          { class: 'referee', score: 0.5, box: [10, 10, 40, 80] },
        ],
      },
      // The goalkeeper found, but called a player: wrong per class, right as people.
      { frame: 1, sourceFrame: 1, tMs: 40, detections: [{ class: 'player', score: 0.7, box: [452, 202, 552, 302] }] },
    ];
    await writeFile(pred, [header(1000, 500), ...frames].map((l) => JSON.stringify(l)).join('\n'));
    const result = await evalCli('detections', '--gt', labels, '--pred', pred);
    const row = (c: string) => result.rows.find((r: { class: string }) => r.class === c);
    expect(result.frames).toBe(2);
    expect(row('player')).toMatchObject({ truePositives: 1, falsePositives: 1, falseNegatives: 0, precision: 0.5 });
    expect(row('goalkeeper')).toMatchObject({ truePositives: 0, falseNegatives: 1, recall: 0 });
    expect(row('ball')).toMatchObject({ truePositives: 0, falsePositives: 1, falseNegatives: 1 });
    expect(row('people')).toMatchObject({ truePositives: 2, falsePositives: 1, falseNegatives: 0, recall: 1 });
    expect(row('people').precision).toBeCloseTo(2 / 3, 10);
    // People by score: 0.9 TP, 0.7 TP, 0.5 FP → both found before the false alarm: AP 1.
    expect(row('people').ap).toBeCloseTo(1, 10);
    // Player: 0.9 TP (recall 1 of 1), 0.7 FP → AP 1; ball: AP 0.
    expect(row('player').ap).toBeCloseTo(1, 10);
    expect(row('ball').ap).toBe(0);
  });

  it('--ball-centre-px matches the ball on box centres, not IoU; people keep IoU', async () => {
    // 1000×500 image: a ball labelled [245,120,255,130] (centre 250,125); a box 3 px right and 2 px up of it,
    // a bit larger (IoU 0.44: a miss at IoU 0.5), and a second one 9.2 px away.
    const labels = join(dir, 'labels-ball');
    await mkdir(labels);
    await writeFile(join(labels, 'a.txt'), '0 0.25 0.25 0.01 0.02\n2 0.5 0.5 0.1 0.2\n');
    const pred = join(dir, 'pred-ball.jsonl');
    const frame = {
      frame: 0,
      sourceFrame: 0,
      tMs: 0,
      detections: [
        { class: 'ball', score: 0.8, box: [246, 116, 260, 130] },
        { class: 'ball', score: 0.6, box: [252, 126, 262, 136] },
        { class: 'player', score: 0.9, box: [452, 200, 552, 300] },
      ],
    };
    await writeFile(pred, [header(1000, 500), frame].map((l) => JSON.stringify(l)).join('\n'));
    const row = (result: { rows: { class: string }[] }, c: string) => result.rows.find((r) => r.class === c);
    const byIou = await evalCli('detections', '--gt', labels, '--pred', pred);
    expect(row(byIou, 'ball')).toMatchObject({ truePositives: 0, falsePositives: 2, ap: 0 });
    const byCentre = await evalCli('detections', '--gt', labels, '--pred', pred, '--ball-centre-px', '4');
    expect(byCentre.ballCentrePx).toBe(4);
    // The first (centre 3.6 px off) matches; the second (9.2 px) is a false ball.
    expect(row(byCentre, 'ball')).toMatchObject({ truePositives: 1, falsePositives: 1, falseNegatives: 0, ap: 1 });
    expect(row(byCentre, 'player')).toMatchObject({ truePositives: 1, falsePositives: 0 });
    const wide = await evalCli('detections', '--gt', labels, '--pred', pred, '--ball-centre-px', '10');
    // One ball, two boxes near it: still one match (one-to-one), the best scored first for AP.
    expect(row(wide, 'ball')).toMatchObject({ truePositives: 1, falsePositives: 1 });
    await expect(
      run(process.execPath, [MAIN, 'eval', 'detections', '--gt', labels, '--pred', pred, '--ball-centre-px', '-1']),
    ).rejects.toMatchObject({ code: 2 });
  });

  it('--ignore leaves out the truth and the detections centred in a region of every frame', async () => {
    // 1000×500 image: a player [450,200,550,300] and a ball [245,120,255,130] labelled; a false referee at
    // [10,10,40,80] (a logo, say). The region [0,0,300,150] holds the ball's truth and the false referee.
    const labels = join(dir, 'labels-ignore');
    await mkdir(labels);
    await writeFile(join(labels, 'a.txt'), '2 0.5 0.5 0.1 0.2\n0 0.25 0.25 0.01 0.02\n');
    const pred = join(dir, 'pred-ignore.jsonl');
    const frame = {
      frame: 0,
      sourceFrame: 0,
      tMs: 0,
      detections: [
        { class: 'player', score: 0.9, box: [450, 200, 550, 300] },
        { class: 'referee', score: 0.5, box: [10, 10, 40, 80] },
        { class: 'ball', score: 0.8, box: [600, 400, 610, 410] },
      ],
    };
    await writeFile(pred, [header(1000, 500), frame].map((l) => JSON.stringify(l)).join('\n'));
    const row = (result: { rows: { class: string }[] }, c: string) => result.rows.find((r) => r.class === c);
    const whole = await evalCli('detections', '--gt', labels, '--pred', pred);
    expect(row(whole, 'people')).toMatchObject({ truePositives: 1, falsePositives: 1, precision: 0.5 });
    expect(row(whole, 'ball')).toMatchObject({ falsePositives: 1, falseNegatives: 1, groundTruthBoxes: 1 });
    const ignoring = await evalCli('detections', '--gt', labels, '--pred', pred, '--ignore', '0,0,300,150');
    expect(ignoring.ignoreRegions).toEqual([[0, 0, 300, 150]]);
    expect(row(ignoring, 'people')).toMatchObject({ truePositives: 1, falsePositives: 0, precision: 1 });
    // The ball's truth is in the region, the false ball outside: no truth left, one false alarm.
    expect(row(ignoring, 'ball')).toMatchObject({ falsePositives: 1, falseNegatives: 0, groundTruthBoxes: 0 });
    await expect(
      run(process.execPath, [MAIN, 'eval', 'detections', '--gt', labels, '--pred', pred, '--ignore', '300,0,0,150']),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--ignore 300,0,0,150') });
  });

  it('AP50 integrates the precision envelope (VOC all-point)', async () => {
    // One frame, two players; detections by score: TP, FP, TP → p = 1, 0.5, 0.667; r = 0.5, 0.5, 1
    // AP = 0.5·1 + 0.5·0.667 = 0.8333.
    const mot = join(dir, 'gt.txt');
    await writeFile(mot, '1,1,0,0,10,20,1,1,1\n1,2,100,0,10,20,1,1,1\n');
    const pred = join(dir, 'ap.jsonl');
    const frame = {
      frame: 0,
      sourceFrame: 0,
      tMs: 0,
      detections: [
        { class: 'player', score: 0.9, box: [0, 0, 10, 20] },
        { class: 'player', score: 0.8, box: [50, 50, 60, 70] },
        { class: 'player', score: 0.7, box: [100, 0, 110, 20] },
      ],
    };
    await writeFile(pred, [header(200, 100), frame].map((l) => JSON.stringify(l)).join('\n'));
    const result = await evalCli('detections', '--gt', mot, '--pred', pred);
    const player = result.rows.find((r: { class: string }) => r.class === 'player');
    expect(player.ap).toBeCloseTo(0.5 + 0.5 * (2 / 3), 10);
    expect(player).toMatchObject({ truePositives: 2, falsePositives: 1 });
  });

  it('refuses a missing --gt with usage status 2', async () => {
    await expect(run(process.execPath, [MAIN, 'eval', 'detections', '--pred', 'x'])).rejects.toMatchObject({ code: 2 });
  });
});

describe('polyvision eval tracks', () => {
  it('scores tracks against MOTChallenge gt on the analysed frames (HOTA, MOTA, IDF1)', async () => {
    // Source at 25 fps, analysed at 5 fps: analysed frame k is source frame 5k (gt frame 5k + 1).
    const lines: string[] = [];
    for (let f = 1; f <= 25; f++) lines.push(`${f},7,${f},0,10,20,1,1,1`);
    const mot = join(dir, 'tracks-gt.txt');
    await writeFile(mot, `${lines.join('\n')}\n`);
    const trackFrames = [0, 1, 2, 3, 4].map((k) => ({
      frame: k,
      tMs: k * 200,
      box: [5 * k + 1, 0, 5 * k + 11, 20],
      score: 0.9,
    }));
    // The same object as two ids: one switch at frame 3.
    const pred = await tracksFile('tracks.json', [
      { id: 1, class: 'player', frames: trackFrames.slice(0, 3) },
      { id: 2, class: 'player', frames: trackFrames.slice(3) },
    ]);
    const result = await evalCli('tracks', '--gt', mot, '--pred', pred);
    expect(result.frames).toBe(5);
    // CLEAR: TP 5, IDSW 1 → MOTA 0.8; Identity: best pairing 3 of 5 → IDF1 0.6.
    expect(result.MOTA).toBeCloseTo(0.8, 10);
    expect(result.IDF1).toBeCloseTo(0.6, 10);
    expect(result.DetA).toBeCloseTo(1, 10);
    // The text form also says where a HOTA goes: boxes exactly on the truth, every person found, nothing else.
    const { stdout } = await run(process.execPath, [MAIN, 'eval', 'tracks', '--gt', mot, '--pred', pred]);
    expect(stdout).toContain('HOTA ');
    expect(stdout).toContain('LocA 1.000  DetRe 1.000  DetPr 1.000');
  });

  it('with sparse hand labels: only the labelled frames count, and boxes in ignore regions count neither way', async () => {
    // Labelled every second analysed frame (source frames 0, 10, 20 of an analysis at 5 fps), one
    // person; an ignore region (consider = 0) over the stands at x ≥ 150.
    const lines: string[] = [];
    for (const f of [0, 10, 20]) lines.push(`${f + 1},7,${f},0,10,20,1,1,1`, `${f + 1},-1,150,0,50,100,0,1,1`);
    const mot = join(dir, 'sparse-gt.txt');
    await writeFile(mot, `${lines.join('\n')}\n`);
    const at = (k: number, x: number) => ({ frame: k, tMs: k * 200, box: [x, 0, x + 10, 20], score: 0.9 });
    const pred = await tracksFile('sparse-tracks.json', [
      // The person, right in every analysed frame (frames 1 and 3 have no labels).
      { id: 1, class: 'player', frames: [0, 1, 2, 3, 4].map((k) => at(k, 5 * k)) },
      // A spectator in the stands: inside the ignore region.
      { id: 2, class: 'player', frames: [0, 1, 2, 3, 4].map((k) => at(k, 170)) },
    ]);
    const sparse = await evalCli('tracks', '--gt', mot, '--pred', pred, '--gt-frames-only');
    expect(sparse.frames).toBe(3);
    expect(sparse.MOTA).toBeCloseTo(1, 10);
    expect(sparse.HOTA).toBeCloseTo(1, 10);
    // Over every analysed frame, the unlabelled frames' boxes are false positives (2 of the person,
    // 2 of the spectator, whose frames there have no ignore region either): MOTA 1 − 4/3.
    const all = await evalCli('tracks', '--gt', mot, '--pred', pred);
    expect(all.frames).toBe(5);
    expect(all.MOTA).toBeCloseTo(1 - 4 / 3, 10);
  });
});
