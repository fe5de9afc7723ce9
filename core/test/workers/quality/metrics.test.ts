import { describe, expect, it } from 'vitest';
import type { BoxXyxy } from '../../../src/workers/detect/index.ts';
import {
  buildSequence,
  detectionQuality,
  evaluateTracking,
  type IdBox,
  matchSimilarity,
  parseMotChallenge,
} from '../../../src/workers/quality/index.ts';

const SQUARE: BoxXyxy = [0, 0, 10, 10];

describe('TrackEval-faithful metrics on hand-computed cases', () => {
  it('perfect tracking scores 1 everywhere', () => {
    const gt: IdBox[] = [];
    for (let f = 1; f <= 5; f++) {
      gt.push({ frame: f, id: 7, box: [f, 0, f + 10, 10] }, { frame: f, id: 9, box: [50, f, 60, f + 20] });
    }
    const tracker = gt.map((b) => ({ ...b, id: b.id + 100 }));
    const m = evaluateTracking(buildSequence(gt, tracker, 1, 5));
    expect(m).toMatchObject({ HOTA: 1, DetA: 1, AssA: 1, LocA: 1, MOTA: 1, IDF1: 1, IDSW: 0, MT: 2, TP: 10 });
  });

  it('an identity switch halfway: MOTA 0.75, IDF1 0.5, HOTA √0.5', () => {
    // One object over 4 frames, tracked exactly, but as id A in frames 1–2 and id B in frames 3–4.
    const gt = [1, 2, 3, 4].map((frame) => ({ frame, id: 1, box: SQUARE }));
    const tracker = [1, 2, 3, 4].map((frame) => ({ frame, id: frame <= 2 ? 10 : 20, box: SQUARE }));
    const m = evaluateTracking(buildSequence(gt, tracker, 1, 4));
    // CLEAR: TP 4, IDSW 1 → (4 − 0 − 1) / 4
    expect(m.IDSW).toBe(1);
    expect(m.MOTA).toBeCloseTo(0.75, 10);
    // Identity: best single pairing covers 2 of 4 frames: IDTP 2, IDFN 2, IDFP 2 → 2 / (2 + 1 + 1)
    expect(m).toMatchObject({ IDTP: 2, IDFN: 2, IDFP: 2 });
    expect(m.IDF1).toBeCloseTo(0.5, 10);
    // HOTA: DetA 1; AssA = (2·2/(4+2−2) + 2·2/(4+2−2)) / 4 = 0.5 at every α
    expect(m.DetA).toBeCloseTo(1, 10);
    expect(m.AssA).toBeCloseTo(0.5, 10);
    expect(m.AssRe).toBeCloseTo(0.5, 10);
    expect(m.AssPr).toBeCloseTo(1, 10);
    expect(m.HOTA).toBeCloseTo(Math.SQRT1_2, 10);
  });

  it('a poorly localised box and a false positive: thresholds differ per metric', () => {
    // gt: one object in frames 1–2. Tracker A: exact in frame 1, IoU 1/3 in frame 2; B: a false positive in frame 1.
    const gt = [1, 2].map((frame) => ({ frame, id: 1, box: SQUARE }));
    const tracker: IdBox[] = [
      { frame: 1, id: 1, box: SQUARE },
      { frame: 2, id: 1, box: [5, 0, 15, 10] },
      { frame: 1, id: 2, box: [100, 100, 110, 110] },
    ];
    const m = evaluateTracking(buildSequence(gt, tracker, 1, 2));
    // CLEAR at IoU 0.5: TP 1, FN 1, FP 2 → MOTA (1 − 2) / 2
    expect(m).toMatchObject({ TP: 1, FN: 1, FP: 2, IDSW: 0 });
    expect(m.MOTA).toBeCloseTo(-0.5, 10);
    expect(m.MOTP).toBeCloseTo(1, 10);
    // Identity: IDTP 1, IDFN 1, IDFP 2 → 1 / (1 + 1 + 0.5)
    expect(m.IDF1).toBeCloseTo(0.4, 10);
    expect(m.IDP).toBeCloseTo(1 / 3, 10);
    expect(m.IDR).toBeCloseTo(0.5, 10);
    // HOTA: for α ≤ 0.30 (6 thresholds) DetA 2/3, AssA 1; for α ≥ 0.35 (13) DetA 1/4, AssA 1/3.
    const low = Math.sqrt(2 / 3);
    const high = Math.sqrt(1 / 12);
    expect(m.HOTAByAlpha[5]).toBeCloseTo(low, 10);
    expect(m.HOTAByAlpha[6]).toBeCloseTo(high, 10);
    expect(m.HOTA).toBeCloseTo((6 * low + 13 * high) / 19, 10);
    expect(m.HOTA0).toBeCloseTo(low, 10);
    expect(m.DetA).toBeCloseTo((6 * (2 / 3) + 13 * 0.25) / 19, 10);
    expect(m.AssA).toBeCloseTo((6 + 13 / 3) / 19, 10);
    expect(m.LocA).toBeCloseTo((6 * (2 / 3) + 13) / 19, 10);
  });

  it('CLEAR keeps last frame’s pairing over a slightly better IoU (no spurious switch)', () => {
    // Two trackers overlap one gt; tracker 1 matched it first. In frame 2 tracker 2 fits better, but
    // TrackEval's +1000 continuity bonus keeps tracker 1: no IDSW.
    const gt = [1, 2].map((frame) => ({ frame, id: 1, box: SQUARE }));
    const tracker: IdBox[] = [
      { frame: 1, id: 1, box: SQUARE },
      { frame: 2, id: 1, box: [1, 0, 11, 10] },
      { frame: 2, id: 2, box: [0, 0, 10, 10] },
    ];
    const m = evaluateTracking(buildSequence(gt, tracker, 1, 2));
    expect(m).toMatchObject({ IDSW: 0, TP: 2, FP: 1, FN: 0 });
  });

  it('no tracker output at all', () => {
    const gt = [1, 2, 3].map((frame) => ({ frame, id: 1, box: SQUARE }));
    const m = evaluateTracking(buildSequence(gt, [], 1, 3));
    expect(m).toMatchObject({ HOTA: 0, MOTA: 0, IDF1: 0, FN: 3, IDFN: 3 });
  });
});

describe('detection precision/recall at IoU 0.5', () => {
  it('counts one-to-one matches', () => {
    const q = detectionQuality([
      {
        gt: [SQUARE, [20, 0, 30, 10]],
        detections: [
          { box: SQUARE, score: 0.9 },
          { box: [25, 0, 35, 10], score: 0.8 }, // IoU 1/3 with the second gt
          { box: [100, 0, 110, 10], score: 0.7 },
          { box: [1, 0, 11, 10], score: 0.6 }, // duplicate of the first: FP
        ],
      },
    ]);
    expect(q).toMatchObject({ truePositives: 1, falsePositives: 3, falseNegatives: 1 });
    expect(q.precision).toBeCloseTo(0.25);
    expect(q.recall).toBeCloseTo(0.5);
    expect(detectionQuality([{ gt: [SQUARE], detections: [{ box: SQUARE, score: 0.2 }] }], 0.5, 0.3).recall).toBe(0);
  });
});

describe('matching a detection on centre distance (the ball)', () => {
  it('matches within centrePx, nearer better, whatever the IoU', () => {
    const ball: BoxXyxy = [245, 120, 255, 130];
    expect(matchSimilarity(ball, [246, 116, 260, 130], { centrePx: 4 })).toBeCloseTo(1 - Math.hypot(3, 2) / 5, 12);
    expect(matchSimilarity(ball, [252, 126, 262, 136], { centrePx: 4 })).toBe(0);
    expect(matchSimilarity(ball, ball, { centrePx: 4 })).toBe(1);
    // The same pair under IoU 0.5: a miss.
    expect(matchSimilarity(ball, [246, 116, 260, 130], 0.5)).toBe(0);
    const q = detectionQuality([{ gt: [ball], detections: [{ box: [246, 116, 260, 130], score: 0.9 }] }], {
      centrePx: 4,
    });
    expect(q).toMatchObject({ truePositives: 1, falsePositives: 0, falseNegatives: 0 });
  });
});

describe('MOTChallenge text', () => {
  it('parses rows and skips ground truth marked not to evaluate', () => {
    const boxes = parseMotChallenge('1,3,10,20,30,40,1,-1,-1,-1\n1,4,0,0,5,5,0,-1,-1,-1\n2,3,11,20,30,40,1\n', true);
    expect(boxes).toEqual([
      { frame: 1, id: 3, box: [10, 20, 40, 60] },
      { frame: 2, id: 3, box: [11, 20, 41, 60] },
    ]);
    expect(() => parseMotChallenge('1,2,three')).toThrow(/line 1/);
  });
});
