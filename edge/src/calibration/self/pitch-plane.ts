/**
 * Feature matches on the pitch plane of a two-camera rig's overlap.
 *
 * ORB over whole frames matches mostly the stands and trees above the pitch:
 * on the tsukuba pair all 185 inliers lie in a 325 px band at the top of the
 * overlap (y 415–740 of 1728), none on the turf. A homography fitted there is
 * right for the pitch only if the cameras share one optical centre and the
 * lens model is exact; otherwise its extrapolation to the pitch, and to the
 * far side of camera B, is off (a kink in the near touchline at the seam).
 * Here ORB runs again, masked to the lower half of each frame where it lies in
 * the other camera's view under the first homography `h0`, and a match is kept
 * only where `h0` puts it within `gatePx` (the first fit is off by tens of
 * pixels on the turf, not by hundreds). The caller fits the pitch plane's
 * homography (and re-chooses the lens) on these matches.
 */

import { transferError } from '../dlt.ts';
import { type FeatureMatch, type GrayImage, matchFeatures } from './features.ts';
import { type DivisionLens, distortDivision, undistortDivision } from './lens-distortion.ts';
import { apply3, inv3 } from './panorama-plane.ts';

/** Options of {@link pitchPlaneMatches}. */
export interface PitchPlaneMatchOptions {
  /** Rows searched start at this fraction of the frame's height (the pitch's near part). @defaultValue 0.5 */
  fromHeightFraction?: number;
  /** Largest distance from `h0`'s prediction kept, undistorted pixels. @defaultValue 150 */
  gatePx?: number;
  /** ORB features per camera. @defaultValue 4000 */
  maxFeatures?: number;
}

/**
 * Matches between cameras A and B on the lower part of their overlap.
 *
 * @param a - camera A's background frame (grey, as recorded).
 * @param b - camera B's, same size.
 * @param lens - the division model both frames are undistorted with to apply `h0`.
 * @param h0 - row-major homography from B's undistorted pixels to A's (the first fit).
 * @returns the matches (distorted pixels, as `matchFeatures` gives them) that pass the gate; may be empty.
 */
export async function pitchPlaneMatches(
  a: GrayImage,
  b: GrayImage,
  lens: DivisionLens,
  h0: readonly number[],
  options: PitchPlaneMatchOptions = {},
): Promise<FeatureMatch[]> {
  const { widthPx: width, heightPx: height } = a;
  const gatePx = options.gatePx ?? 150;
  const yFrom = Math.round(height * (options.fromHeightFraction ?? 0.5));
  const h0Inverse = inv3(h0 as number[]);
  const inFrame = (x: number, y: number) => x >= 0 && x < width && y >= 0 && y < height;
  const maskA = new Uint8Array(width * height);
  const maskB = new Uint8Array(width * height);
  for (let y = yFrom; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [u, v] = undistortDivision(lens, x, y);
      if (!Number.isFinite(u)) continue;
      // A pixel of A counts where B sees it, and the same pixel position of B where A sees it.
      const [ub, vb] = apply3(h0Inverse, u, v);
      if (inFrame(...distortDivision(lens, ub, vb))) maskA[y * width + x] = 255;
      const [ua, va] = apply3(h0 as number[], u, v);
      if (inFrame(...distortDivision(lens, ua, va))) maskB[y * width + x] = 255;
    }
  }
  const found = await matchFeatures(a, b, { maxFeatures: options.maxFeatures ?? 4000, masks: [maskA, maskB] });
  return found.matches.filter((m) => {
    const pa = undistortDivision(lens, m.a[0], m.a[1]);
    const pb = undistortDivision(lens, m.b[0], m.b[1]);
    return Number.isFinite(pa[0]) && Number.isFinite(pb[0]) && transferError(h0, pb, pa) < gatePx;
  });
}
