/**
 * The self-calibrated panorama's frame: where each camera goes (`image_to_panorama`, to the panorama's plane),
 * the projection (planar, or the plane on a cylinder), the size, and the crop to what the cameras see.
 *
 * 1. Layout (panorama-layout.ts): the box over the pitch lines and the scale that keeps their density.
 * 2. Placement: each camera's middle-plane homography scaled and moved to the box (`place`).
 * 3. Crop (panorama-crop.ts): the largest rectangle the cameras see that keeps the pitch lines, as a
 *    translation of every mapping (and of the cylinder's centre).
 *
 * `auto` takes the cylinder unless its crop has to keep unseen (black) pixels where the plane's does not:
 * a cylinder bends the cameras' top and bottom edges, and on a rig whose pitch fills the frames to their corners
 * (the synthetic rig) no rectangle is then fully seen.
 */
import {
  cylindricalProjection,
  IDENTITY_PROJECTION,
  normalizeHomography,
  type PanoramaProjection,
} from '@polyvision/shared';
import { type DivisionLens, distortDivision } from './lens-distortion.ts';
import { chooseCoveredCrop, type PanoramaCrop } from './panorama-crop.ts';
import { layoutPanorama, type PlanePoint } from './panorama-layout.ts';
import { apply3, inv3, mul3 } from './panorama-plane.ts';

/** Input of {@link framePanorama}. */
export interface FrameInput {
  /** Pitch-line pixels on the middle plane with their density scale. */
  pitchMid: readonly PlanePoint[];
  /** Per camera: undistorted camera pixels → middle plane, row-major 3×3. */
  toMid: readonly (readonly number[])[];
  /** Per camera: its lens (to tell which panorama pixels it sees). */
  lenses: readonly DivisionLens[];
  /** The cameras' frame size, pixels. */
  cameraWidthPx: number;
  cameraHeightPx: number;
  projection: 'auto' | 'planar' | 'cylindrical';
  /** Panorama pixels per source pixel aimed at on the pitch. */
  pixelDensity: number;
  maxWidthPx: number;
  /** Upper bound on the panorama's pixels before the crop (none when absent). */
  maxPixels?: number;
  /** Crop to what the cameras see. */
  crop: boolean;
}

/** The panorama's frame. */
export interface PanoramaFrame {
  /** Per camera: undistorted pixels → the panorama's plane. */
  imageToPano: number[][];
  /** Panorama pixels per middle-plane unit. */
  scale: number;
  /** The cylinder in panorama-plane pixels, or null (planar). */
  cylinder: { focalPx: number; cx: number; cy: number } | null;
  projection: PanoramaProjection;
  widthPx: number;
  heightPx: number;
  /** The crop (null when not asked for) with the size before it. */
  crop: (PanoramaCrop & { before: { widthPx: number; heightPx: number } }) | null;
  /** Density on the pitch lines, panorama pixels per source pixel (before the crop, which keeps them). */
  density: { min: number; median: number };
}

function frameWith(input: FrameInput, projection: 'planar' | 'cylindrical'): PanoramaFrame {
  const width = input.cameraWidthPx;
  const height = input.cameraHeightPx;
  const layout = layoutPanorama(input.pitchMid, {
    projection,
    // The middle camera's principal point: for a turning pair the middle plane is the image plane of a camera
    // with the cameras' intrinsics turned half way (panorama-plane.ts), so the image centre.
    centre: { x: (width - 1) / 2, y: (height - 1) / 2 },
    focalCandidatesPx: Array.from({ length: 27 }, (_, k) => width * (0.4 + 0.1 * k)),
    pixelDensity: input.pixelDensity,
    maxWidthPx: input.maxWidthPx,
    ...(input.maxPixels !== undefined ? { maxPixels: input.maxPixels } : {}),
  });
  const { scale: s, box } = layout;
  const place = [s, 0, -s * box.x0, 0, s, -s * box.y0, 0, 0, 1];
  let imageToPano = input.toMid.map((m) => normalizeHomography(mul3(place, m as number[])));
  let cylinder = layout.cylinder && {
    focalPx: s * layout.cylinder.focalPx,
    cx: s * (layout.cylinder.cx - box.x0),
    cy: s * (layout.cylinder.cy - box.y0),
  };
  const projectionOf = (c: typeof cylinder) => (c ? cylindricalProjection(c.focalPx, c.cx, c.cy) : IDENTITY_PROJECTION);
  let frame: PanoramaFrame = {
    imageToPano,
    scale: s,
    cylinder,
    projection: projectionOf(cylinder),
    widthPx: layout.widthPx,
    heightPx: layout.heightPx,
    crop: null,
    density: layout.density,
  };
  if (!input.crop) return frame;
  const inverses = imageToPano.map((m) => inv3(m));
  const { projection: wrap } = frame;
  const seen = (x: number, y: number) =>
    inverses.some((inverse, cam) => {
      const [u, v] = apply3(inverse, ...wrap.toPlane(x, y));
      if (!Number.isFinite(u)) return false;
      const [du, dv] = distortDivision(input.lenses[cam] as DivisionLens, u, v);
      return du >= 0 && du <= width - 1 && dv >= 0 && dv <= height - 1;
    });
  // The pitch: its line pixels inside their robust box (the same 0.2 % outliers per side the box ignores).
  const pitchPoints: number[] = [];
  const { pitchBox } = layout;
  for (const p of layout.laidOut) {
    if (p.x < pitchBox.x0 || p.x > pitchBox.x1 || p.y < pitchBox.y0 || p.y > pitchBox.y1) continue;
    pitchPoints.push(s * (p.x - box.x0), s * (p.y - box.y0));
  }
  const chosen = chooseCoveredCrop({ widthPx: frame.widthPx, heightPx: frame.heightPx, seen, pitchPoints });
  const { x, y } = chosen.rect;
  const shift = [1, 0, -x, 0, 1, -y, 0, 0, 1];
  imageToPano = imageToPano.map((m) => normalizeHomography(mul3(shift, m)));
  cylinder = cylinder && { ...cylinder, cx: cylinder.cx - x, cy: cylinder.cy - y };
  frame = {
    ...frame,
    imageToPano,
    cylinder,
    projection: projectionOf(cylinder),
    widthPx: chosen.rect.width,
    heightPx: chosen.rect.height,
    crop: { ...chosen, before: { widthPx: frame.widthPx, heightPx: frame.heightPx } },
  };
  return frame;
}

/** Frames the panorama (see the file's comment). */
export function framePanorama(input: FrameInput): PanoramaFrame {
  if (input.projection !== 'auto') return frameWith(input, input.projection);
  const cylindrical = frameWith(input, 'cylindrical');
  if (!cylindrical.crop?.filled) return cylindrical;
  const planar = frameWith(input, 'planar');
  return !planar.crop?.filled || planar.crop.unseenFraction < cylindrical.crop.unseenFraction ? planar : cylindrical;
}
