import { describe, expect, it } from 'vitest';
import {
  type BoxXyxy,
  type DetectionsFile,
  decodeHistogram,
  encodeHistogram,
  histogramDistance,
  torsoHistogram,
} from '../../../src/workers/detect/index.ts';
import {
  type AppearanceFeatures,
  ByteTracker,
  storedAppearanceFeatures,
  trackClip,
} from '../../../src/workers/track/index.ts';
import { detectionsHeader } from '../support/tracks.ts';

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
    // A person under 14 source pixels gets no colours (a torso of a few pixels is noise), even
    // where the frame is upscaled enough to hold many frame pixels of it.
    expect(torsoHistogram({ width, height, data }, [10, 20, 30, 32])).toBeNull();
    expect(torsoHistogram({ width, height, data }, [5, 10, 15, 16], 2)).toBeNull();
    expect(torsoHistogram({ width, height, data }, [5, 10, 15, 25], 2)).not.toBeNull();
  });

  it("with appearance, finds a player again after an occlusion he stopped in, but never in another team's shirt", () => {
    // A player 8×20 px (a panorama's far side) runs right at 3 px per analysed frame, is hidden for
    // 4 frames during which he stops, and reappears where he stopped: the Kalman prediction ran on
    // 15 px, about two box widths. A player of the other team runs toward him, is hidden in the same
    // frames and stops too: he reappears 3 px from where the red player's prediction points, and the
    // red player 6 px from his — motion alone with a wide buffer would swap them.
    const small = (cx: number) => box(cx, 100, 8, 20);
    const frames = Array.from({ length: 24 }, (_, f) => {
      const hidden = f >= 10 && f < 14;
      const red = f < 10 ? 100 + 3 * f : 127; // stops at x = 127 while hidden
      return {
        frame: f,
        tMs: f * 100,
        detections: hidden
          ? []
          : [
              { class: 'player' as const, score: 0.9, box: small(red) },
              { class: 'player' as const, score: 0.9, box: small(f < 10 ? 175 - 3 * f : 139) },
            ],
        colours: hidden ? [] : [RED, BLUE],
      };
    });
    const file: DetectionsFile = {
      header: detectionsHeader(24, 10, 640, 200),
      frames: frames.map(({ colours: _c, ...f }) => f),
    };
    const appearance: AppearanceFeatures = new Map(frames.map((f, i) => [i, f.colours]));
    const redIds = (withAppearance: boolean) => {
      const { tracks } = trackClip(file, {
        modelCardThresholds: { high: 0.5, low: 0.1 },
        ...(withAppearance ? { appearance } : {}),
      });
      return tracks.tracks
        .filter((t) => t.frames.some((f) => !f.interpolated && Math.abs((f.box[0] + f.box[2]) / 2 - 127) < 1))
        .map((t) => t.id);
    };
    // Motion alone (×1.5 buffer): the red player's prediction and his box no longer overlap: a new id.
    expect(redIds(false)).toHaveLength(2);
    // Appearance (×2.5 buffer, colour gate): one id from start to end, and the blue player kept his own.
    const { tracks } = trackClip(file, { modelCardThresholds: { high: 0.5, low: 0.1 }, appearance });
    const byColumn = (x: number, f: number) =>
      tracks.tracks.find((t) => t.frames.some((p) => p.frame === f && Math.abs((p.box[0] + p.box[2]) / 2 - x) < 1));
    expect(redIds(true)).toHaveLength(1);
    expect(byColumn(100, 0)!.id).toBe(byColumn(127, 23)!.id);
    expect(byColumn(175, 0)!.id).toBe(byColumn(139, 23)!.id);
    expect(byColumn(175, 0)!.id).not.toBe(byColumn(100, 0)!.id);
  });
});

describe('stored appearance', () => {
  it('round-trips a histogram through the detections file and reads it back per frame', () => {
    const h = new Float32Array(64);
    h[48] = 0.7;
    h[3] = 0.2;
    h[10] = 0.1;
    const text = encodeHistogram(h);
    expect(text).toHaveLength(88);
    const back = decodeHistogram(text)!;
    expect(histogramDistance(h, back)).toBeLessThan(1e-3);
    expect(decodeHistogram('AAAA')).toBeNull(); // not 64 bytes
    expect(decodeHistogram(encodeHistogram(new Float32Array(64)))).toBeNull(); // no colour at all

    const header = detectionsHeader(2, 10, 100, 100);
    const player = { class: 'player' as const, score: 0.9, box: box(50, 50) };
    expect(storedAppearanceFeatures({ header, frames: [{ frame: 0, tMs: 0, detections: [player] }] })).toBeNull();
    const stored = storedAppearanceFeatures({
      header,
      frames: [
        {
          frame: 0,
          tMs: 0,
          detections: [
            { ...player, appearance: text },
            { class: 'ball', score: 0.5, box: box(9, 9, 2, 2) },
          ],
        },
        { frame: 1, tMs: 100, detections: [] },
      ],
    })!;
    expect(stored.get(0)![0]![48]).toBeCloseTo(0.7, 2);
    expect(stored.get(0)![1]).toBeNull();
    expect(stored.get(1)).toEqual([]);
  });
});
