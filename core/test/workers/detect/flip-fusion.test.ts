import { describe, expect, it } from 'vitest';
import { fuseFlipPasses, mirrorChw } from '../../../src/workers/detect/flip-fusion.ts';
import type { Detection } from '../../../src/workers/detect/index.ts';

describe('flip test-time augmentation: fusing the two passes', () => {
  it('merges a person both passes found into the score-weighted mean box with the mean score', () => {
    const recorded: Detection[] = [{ class: 'player', score: 0.8, box: [100, 100, 120, 160] }];
    const mirrored: Detection[] = [{ class: 'goalkeeper', score: 0.4, box: [103, 100, 123, 160] }];
    const [fused, ...rest] = fuseFlipPasses(recorded, mirrored);
    expect(rest).toHaveLength(0);
    expect(fused?.class).toBe('player'); // the higher-scoring pass's role
    expect(fused?.score).toBeCloseTo(0.6, 9);
    expect(fused?.box[0]).toBeCloseTo((100 * 0.8 + 103 * 0.4) / 1.2, 9);
    expect(fused?.box[2]).toBeCloseTo((120 * 0.8 + 123 * 0.4) / 1.2, 9);
  });

  it('halves the score of a person only one pass found, keeps the ball as found, never merges the two', () => {
    const recorded: Detection[] = [
      { class: 'player', score: 0.9, box: [0, 0, 10, 30] },
      { class: 'ball', score: 0.5, box: [200, 200, 206, 206] },
    ];
    const mirrored: Detection[] = [
      { class: 'referee', score: 0.6, box: [400, 0, 410, 30] },
      { class: 'player', score: 0.7, box: [200, 200, 206, 206] },
    ];
    const fused = fuseFlipPasses(recorded, mirrored);
    expect(fused).toHaveLength(4);
    expect(fused.map((d) => [d.class, d.score])).toEqual([
      ['ball', 0.5],
      ['player', 0.45],
      ['player', 0.35],
      ['referee', 0.3],
    ]);
    // A ball both passes found: the larger score, the weighted box.
    const [ball] = fuseFlipPasses(
      [{ class: 'ball', score: 0.3, box: [10, 10, 16, 16] }],
      [{ class: 'ball', score: 0.6, box: [11, 10, 17, 16] }],
    );
    expect(ball?.score).toBe(0.6);
    expect(ball?.box[0]).toBeCloseTo((10 * 0.3 + 11 * 0.6) / 0.9, 9);
  });

  it('mirrors a CHW image in place (twice: the image again)', () => {
    const width = 5;
    const height = 2;
    const data = Float32Array.from({ length: 2 + 3 * width * height }, (_, i) => i);
    const before = data.slice();
    mirrorChw(data, 2, width, height);
    expect(data[0]).toBe(0); // outside the image: untouched
    expect(data[2]).toBe(before[2 + width - 1]);
    expect(data[2 + width * height + width]).toBe(before[2 + width * height + 2 * width - 1]);
    mirrorChw(data, 2, width, height);
    expect(data).toEqual(before);
  });
});
