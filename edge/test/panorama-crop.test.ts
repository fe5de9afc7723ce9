/**
 * The crop of a self-calibrated panorama to what the cameras see
 * (edge/src/calibration/self/panorama-crop.ts), on a synthetic two-camera
 * layout: each camera sees a convex quadrilateral of the panorama (a
 * homography's image of its frame), leaving black bands at the sides and a
 * wedge at the bottom centre that neither camera covers.
 */
import { describe, expect, it } from 'vitest';
import { chooseCoveredCrop } from '../src/calibration/self/panorama-crop.ts';

type Quad = Array<[number, number]>;

/** Inside a convex quadrilateral given clockwise in image coordinates (y down). */
function insideQuad(q: Quad, x: number, y: number): boolean {
  for (let i = 0; i < q.length; i++) {
    const [ax, ay] = q[i] as [number, number];
    const [bx, by] = q[(i + 1) % q.length] as [number, number];
    if ((bx - ax) * (y - ay) - (by - ay) * (x - ax) < 0) return false;
  }
  return true;
}

// 1000×400 panorama. Camera A's right edge runs (560,0)→(470,400), camera B's left edge (440,0)→(530,400):
// they cross at x = 500, y ≈ 267, so below that a wedge at the bottom centre is seen by neither.
const W = 1000;
const H = 400;
const camA: Quad = [
  [20, 0],
  [560, 0],
  [470, 400],
  [0, 400],
];
const camB: Quad = [
  [440, 0],
  [980, 0],
  [1000, 400],
  [530, 400],
];
const seen = (x: number, y: number) => insideQuad(camA, x, y) || insideQuad(camB, x, y);

/** Pitch-line pixels: far and near touchline, halfway line, goal lines (y down: far at the top). */
function pitchLines(nearY: number): number[] {
  const pts: number[] = [];
  for (let x = 60; x <= 940; x += 2) pts.push(x, 60, x, nearY);
  for (let y = 60; y <= nearY; y += 2) pts.push(500, y, 60, y, 940, y);
  return pts;
}

function unseenPixels(rect: { x: number; y: number; width: number; height: number }): number {
  let unseen = 0;
  for (let y = rect.y; y < rect.y + rect.height; y++) {
    for (let x = rect.x; x < rect.x + rect.width; x++) if (!seen(x, y)) unseen++;
  }
  return unseen;
}

describe('panorama crop to what the cameras see', () => {
  it('cuts the side bands and the bottom wedge, keeps every pitch line, and is as large as the wedge allows', () => {
    const crop = chooseCoveredCrop({ widthPx: W, heightPx: H, seen, pitchPoints: pitchLines(240) });
    const { rect } = crop;
    // Every pixel of the rectangle is seen, checked pixel by pixel against the cameras' footprints.
    expect(unseenPixels(rect)).toBe(0);
    expect(crop.unseenFraction).toBe(0);
    expect(crop.filled).toBe(false);
    expect(crop.method).toBe('seen');
    expect(crop.unseenFractionBefore).toBeGreaterThan(0.02);
    expect(crop.pitchKeptFraction).toBeGreaterThanOrEqual(0.995);
    // Even corners and sizes (yuv420).
    for (const v of [rect.x, rect.y, rect.width, rect.height]) expect(v % 2).toBe(0);
    // The bands go: the left edge is at x ≥ 20 at the top, the right at x ≤ 980.
    expect(rect.x).toBeGreaterThanOrEqual(20);
    expect(rect.x + rect.width).toBeLessThanOrEqual(980);
    // Near-optimal: the wedge's tip is at y ≈ 267, so [20, 980] × [0, 267) is the best full-width rectangle.
    expect(rect.y).toBe(0);
    expect(rect.height).toBeGreaterThanOrEqual(250);
    expect(rect.height).toBeLessThanOrEqual(268);
    expect(rect.width).toBeGreaterThanOrEqual(920);
  });

  it('allows a sliver of ≤ 0.2 % unseen pixels when only that keeps the pitch', () => {
    // The near touchline at y = 290 runs just below the wedge's tip (y ≈ 267): a ~10 px wide triangle.
    const crop = chooseCoveredCrop({ widthPx: W, heightPx: H, seen, pitchPoints: pitchLines(290) });
    expect(crop.method).toBe('tolerance');
    expect(crop.filled).toBe(true);
    expect(crop.pitchKeptFraction).toBeGreaterThanOrEqual(0.995);
    expect(crop.rect.y + crop.rect.height).toBeGreaterThan(290);
    const unseen = unseenPixels(crop.rect) / (crop.rect.width * crop.rect.height);
    expect(unseen).toBeGreaterThan(0);
    expect(unseen).toBeLessThanOrEqual(0.002);
    expect(crop.rect.width).toBeGreaterThanOrEqual(920);
  });

  it('keeps the pitch when no rectangle within the allowance can, and says the rest is filled', () => {
    // The near touchline runs through the wedge's wide part: no rectangle with ≤ 0.2 % unseen holds it.
    const crop = chooseCoveredCrop({ widthPx: W, heightPx: H, seen, pitchPoints: pitchLines(350) });
    expect(crop.method).toBe('pitch_box');
    expect(crop.filled).toBe(true);
    expect(crop.pitchKeptFraction).toBeGreaterThanOrEqual(0.995);
    expect(crop.rect.y + crop.rect.height).toBeGreaterThanOrEqual(350);
    expect(crop.unseenFraction).toBeGreaterThan(0);
    expect(crop.unseenFraction).toBeLessThan(crop.unseenFractionBefore);
    expect(Math.abs(crop.unseenFraction - unseenPixels(crop.rect) / (crop.rect.width * crop.rect.height))).toBeLessThan(
      0.01,
    );
  });

  it('leaves a fully seen panorama whole', () => {
    const crop = chooseCoveredCrop({ widthPx: 640, heightPx: 360, seen: () => true, pitchPoints: [100, 100] });
    expect(crop.rect).toEqual({ x: 0, y: 0, width: 640, height: 360 });
    expect(crop.unseenFraction).toBe(0);
    expect(crop.pitchKeptFraction).toBe(1);
  });
});
