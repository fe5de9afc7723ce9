/**
 * How straight the pitch lines are: the dominant line of the undistorted
 * line pixels (the strongest Hough peak: on a stadium rig the near touchline)
 * is fitted by total least squares to the pixels within a band of it, and the
 * worst deviation of those pixels from the fit is reported, after and before
 * undistortion (the same pixels, their distorted positions fitted the same way).
 */
import { type DivisionLens, undistortDivision } from './lens-distortion.ts';
import { houghVotes, type PointList } from './pitch-lines.ts';

/** Worst deviation from the fitted line, pixels, and the pixels it was measured on. */
export interface LineDeviation {
  distortedPx: number;
  undistortedPx: number;
  points: number;
}

function tlsMaxDeviation(xs: number[], ys: number[]): number {
  const n = xs.length;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += (xs[i] as number) / n;
    my += (ys[i] as number) / n;
  }
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - mx;
    const dy = (ys[i] as number) - my;
    sxx += dx * dx;
    syy += dy * dy;
    sxy += dx * dy;
  }
  // Normal of the best line: the eigenvector of the scatter matrix with the smaller eigenvalue.
  const theta = 0.5 * Math.atan2(2 * sxy, sxx - syy);
  const nx = -Math.sin(theta);
  const ny = Math.cos(theta);
  let worst = 0;
  for (let i = 0; i < n; i++)
    worst = Math.max(worst, Math.abs(((xs[i] as number) - mx) * nx + ((ys[i] as number) - my) * ny));
  return worst;
}

/**
 * Deviation of the dominant pitch line from straight, before and after undistortion with `lens`.
 * @param bandPx - half width of the band around the Hough line that selects its pixels. @defaultValue 4
 */
export function dominantLineDeviation(points: PointList, lens: DivisionLens, bandPx = 4): LineDeviation | null {
  const { votes, rhoBins, rhoOffsetPx, zoom } = houghVotes(points, lens);
  const thetaBins = votes.length / rhoBins;
  let best = 0;
  for (let i = 1; i < votes.length; i++) if ((votes[i] as number) > (votes[best] as number)) best = i;
  const theta = (Math.PI * (best % thetaBins)) / thetaBins;
  const rho = Math.floor(best / thetaBins) * 2 - rhoOffsetPx;
  const c = Math.cos(theta);
  const s = Math.sin(theta);
  const ux: number[] = [];
  const uy: number[] = [];
  const dx: number[] = [];
  const dy: number[] = [];
  for (let i = 0; i < points.length / 2; i++) {
    const px = points[2 * i] as number;
    const py = points[2 * i + 1] as number;
    const [x, y] = undistortDivision(lens, px, py);
    if (!Number.isFinite(x)) continue;
    if (Math.abs(((x - lens.cx) * c + (y - lens.cy) * s) * zoom - rho) > bandPx) continue;
    ux.push(x);
    uy.push(y);
    dx.push(px);
    dy.push(py);
  }
  if (ux.length < 20) return null;
  return { distortedPx: tlsMaxDeviation(dx, dy), undistortedPx: tlsMaxDeviation(ux, uy), points: ux.length };
}
