/**
 * Where the pitch goes in a self-calibrated panorama, and at what scale.
 *
 * The input is the pitch-line pixels of both cameras on the middle plane
 * (panorama-plane.ts), each with its density scale: middle-plane units per
 * source pixel there. The panorama is either that plane (`planar`) or the plane
 * wrapped on a cylinder about the vertical axis through the middle camera's
 * principal point (`cylindrical`, shared `cylindricalProjection`). A plane
 * spends pixels on a wide rig's sides as 1/cos²θ, so keeping the source density
 * on the far side of the pitch (the smallest) makes it very wide; a cylinder
 * spends them evenly per degree. Its focal length is searched: the one whose
 * panorama, scaled so that 95 % of the pitch-line pixels keep at least
 * `pixelDensity`, has the fewest pixels (the smallest panorama that keeps the
 * pitch sharp).
 *
 * The box is the pitch lines' robust extent (0.2–99.8 %) with a margin: 8 %
 * at the sides and bottom, 25 % above (the far stands).
 */

import { cylindricalProjection } from '@polyvision/shared';

/** A pitch-line pixel on the middle plane and its density scale there (plane units per source pixel). */
export interface PlanePoint {
  x: number;
  y: number;
  scale: number;
}

/** What {@link layoutPanorama} chose. */
export interface PanoramaLayout {
  /** Panorama pixels per middle-plane unit. */
  scale: number;
  /** The panorama's box in laid-out units (the cylinder's coordinates, or the plane's), margin included. */
  box: { x0: number; x1: number; y0: number; y1: number };
  /** The pitch lines' robust box (no margin), laid-out units. */
  pitchBox: { x0: number; x1: number; y0: number; y1: number };
  widthPx: number;
  heightPx: number;
  /** The cylinder, middle-plane units (null: planar). */
  cylinder: { focalPx: number; cx: number; cy: number } | null;
  /** Each input point in laid-out units (same order). */
  laidOut: Array<{ x: number; y: number }>;
  /** Density of the pitch-line pixels in the panorama (panorama pixels per source pixel): min and median. */
  density: { min: number; median: number };
}

/** Options of {@link layoutPanorama}. */
export interface LayoutOptions {
  projection: 'planar' | 'cylindrical';
  /** The middle camera's principal point on the middle plane (the cylinder's axis passes through it). */
  centre: { x: number; y: number };
  /** Focal lengths tried for the cylinder, middle-plane units. */
  focalCandidatesPx: readonly number[];
  /** Panorama pixels per source pixel aimed at on the pitch. @defaultValue 1 */
  pixelDensity?: number;
  /** Upper bound on the panorama's width; the density gives way above it. @defaultValue 7680 */
  maxWidthPx?: number;
  /** Upper bound on the panorama's pixels (before the crop); the density gives way above it. @defaultValue none */
  maxPixels?: number;
}

/** The value at fraction `p` (0–1) of an ascending list (nearest rank, rounding down); 0 for an empty one. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * (sorted.length - 1)))] ?? 0;
}

/** One candidate: the points laid out, their scales, and the panorama it needs. */
function candidate(points: readonly PlanePoint[], cylinder: PanoramaLayout['cylinder'], options: LayoutOptions) {
  const laidOut: Array<{ x: number; y: number }> = [];
  const scales: number[] = [];
  const wrap = cylinder ? cylindricalProjection(cylinder.focalPx, cylinder.cx, cylinder.cy) : null;
  for (const p of points) {
    if (!cylinder || !wrap) {
      laidOut.push({ x: p.x, y: p.y });
      scales.push(p.scale);
      continue;
    }
    const [x, y] = wrap.fromPlane(p.x, p.y);
    laidOut.push({ x, y });
    // The cylinder's Jacobian determinant is cos³θ (cos θ = f / √(f² + dx²)): linear scale cos^1.5 θ.
    scales.push(p.scale * (cylinder.focalPx / Math.hypot(cylinder.focalPx, p.x - cylinder.cx)) ** 1.5);
  }
  const xs = laidOut.map((p) => p.x).sort((a, b) => a - b);
  const ys = laidOut.map((p) => p.y).sort((a, b) => a - b);
  const pitchBox = {
    x0: percentile(xs, 0.002),
    x1: percentile(xs, 0.998),
    y0: percentile(ys, 0.002),
    y1: percentile(ys, 0.998),
  };
  const bw = pitchBox.x1 - pitchBox.x0;
  const bh = pitchBox.y1 - pitchBox.y0;
  const box = {
    x0: pitchBox.x0 - 0.08 * bw,
    x1: pitchBox.x1 + 0.08 * bw,
    y0: pitchBox.y0 - 0.25 * bh,
    y1: pitchBox.y1 + 0.08 * bh,
  };
  scales.sort((a, b) => a - b);
  const unconstrained = (options.pixelDensity ?? 1) / Math.max(1e-6, percentile(scales, 0.05));
  let scale = unconstrained;
  const maxWidth = options.maxWidthPx ?? 7680;
  if ((box.x1 - box.x0) * scale > maxWidth) scale = maxWidth / (box.x1 - box.x0);
  const areaAtScale = (box.x1 - box.x0) * (box.y1 - box.y0);
  if (options.maxPixels !== undefined && areaAtScale * scale * scale > options.maxPixels) {
    scale = Math.sqrt(options.maxPixels / areaAtScale);
  }
  return {
    scale,
    box,
    pitchBox,
    laidOut,
    cylinder,
    // The pixels the panorama needs at the density aimed at (the search's cost).
    areaPx: (box.x1 - box.x0) * (box.y1 - box.y0) * unconstrained * unconstrained,
    density: { min: scale * percentile(scales, 0), median: scale * percentile(scales, 0.5) },
  };
}

/**
 * Lays the pitch out (see the file's comment).
 * @param points - pitch-line pixels on the middle plane; at least one.
 */
export function layoutPanorama(points: readonly PlanePoint[], options: LayoutOptions): PanoramaLayout {
  let best = candidate(points, null, options);
  if (options.projection === 'cylindrical') {
    let bestCylinder: ReturnType<typeof candidate> | null = null;
    for (const focalPx of options.focalCandidatesPx) {
      const c = candidate(points, { focalPx, cx: options.centre.x, cy: options.centre.y }, options);
      if (!bestCylinder || c.areaPx < bestCylinder.areaPx) bestCylinder = c;
    }
    if (bestCylinder) best = bestCylinder;
  }
  const widthPx = Math.max(2, 2 * Math.round(((best.box.x1 - best.box.x0) * best.scale) / 2));
  const heightPx = Math.max(2, 2 * Math.round(((best.box.y1 - best.box.y0) * best.scale) / 2));
  return {
    scale: best.scale,
    box: best.box,
    pitchBox: best.pitchBox,
    widthPx,
    heightPx,
    cylinder: best.cylinder,
    laidOut: best.laidOut,
    density: best.density,
  };
}
