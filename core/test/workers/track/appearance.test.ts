import { describe, expect, it } from 'vitest';
import type { BoxXyxy } from '../../../src/workers/detect/index.ts';
import { ByteTracker, histogramDistance, torsoHistogram } from '../../../src/workers/track/index.ts';

const box = (cx: number, cy: number, w = 20, h = 50): BoxXyxy => [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];

/** A 64-bin histogram with all its mass in one bin. */
const colour = (bin: number) => {
  const h = new Float32Array(64);
  h[bin] = 1;
  return h;
};
const RED = colour(48);
const BLUE = colour(3);

/**
 * Two players run toward each other on one line, meet at frame 20 and both turn back. Motion alone
 * predicts that each keeps going, so the ids swap; their shirts say otherwise.
 */
function bounce(withAppearance: boolean): { redIds: Set<number> } {
  const tracker = new ByteTracker({ lostTrackBufferFrames: 30 });
  const redIds = new Set<number>();
  for (let f = 0; f < 40; f++) {
    const offset = f <= 20 ? 3 * f : 3 * (40 - f); // 3 px per frame; they meet at x = 160
    const red = { box: box(100 + offset, 200), score: 0.9, feature: withAppearance ? RED : null };
    const blue = { box: box(220 - offset, 200), score: 0.9, feature: withAppearance ? BLUE : null };
    for (const o of tracker.update([red, blue])) if (o.detectionIndex === 0) redIds.add(o.trackId);
  }
  return { redIds };
}

describe('appearance', () => {
  it('keeps ids through a bounce that swaps them on motion alone', () => {
    expect(bounce(false).redIds.size).toBeGreaterThan(1); // motion only: the red player changes id
    expect([...bounce(true).redIds]).toEqual([1]);
  });

  it('measures torso colours, leaving out grass', () => {
    // 40×100 BGR frame: grass green everywhere, a red shirt in rows 25–45 of a box [10, 10, 30, 90].
    const width = 40;
    const height = 100;
    const data = Buffer.alloc(width * height * 3);
    for (let i = 0; i < width * height; i++) data.set([40, 140, 50], i * 3); // B, G, R: grass
    for (let y = 20; y <= 50; y++) for (let x = 10; x <= 30; x++) data.set([20, 20, 220], (y * width + x) * 3);
    const h = torsoHistogram({ width, height, data }, [10, 10, 30, 90])!;
    // Red 220 → bin 3, green 20 → 0, blue 20 → 0: bin (3·4 + 0)·4 + 0 = 48 holds every non-grass pixel.
    expect(h[48]).toBeCloseTo(1, 5);
    expect(histogramDistance(h, RED)).toBeCloseTo(0, 5);
    expect(histogramDistance(h, BLUE)).toBeCloseTo(1, 5);
    expect(torsoHistogram({ width, height, data }, [100, 100, 104, 104])).toBeNull();
  });
});
