/**
 * Where the people and the ball appear in one camera: their projected
 * billboard geometry, image boxes and depth, in painter's order. The
 * renderer draws exactly inside these boxes and the ground truth writes them,
 * so both always agree.
 */
import { type PinholeCamera, projectPoint } from './camera.ts';
import { BALL_RADIUS_M, type BallState, type MatchState, type PersonState } from './simulation.ts';

/** Ground-truth class ids (MOT `class` column and detector classes, 1-based). */
export const CLASS_IDS = { player: 1, goalkeeper: 2, referee: 3, ball: 4 } as const;
export const CLASS_NAMES = ['player', 'goalkeeper', 'referee', 'ball'] as const;

/** Half the drawn width of a person (arms, stride), metres. */
export const PERSON_HALF_WIDTH_M = 0.3;
/** Nearer than this (metres along the optical axis), a figure is not drawn. */
const MIN_DEPTH_M = 0.5;

export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

interface FigureBase {
  id: number;
  classId: number;
  /** Depth of the figure's ground contact along the optical axis, metres. */
  depthM: number;
  /** Unclipped image box, pixels. */
  box: Box;
}

export interface PersonFigure extends FigureBase {
  kind: 'person';
  person: PersonState;
  /** Projection of the feet (pitch point, z = 0). */
  footU: number;
  footV: number;
  /** Projection of the top of the head (z = height). */
  topU: number;
  topV: number;
  /** Pixels per metre at the figure (vertical extent / height). */
  pxPerM: number;
}

export interface BallFigure extends FigureBase {
  kind: 'ball';
  ball: BallState;
  centreU: number;
  centreV: number;
  radiusPx: number;
  /** Projection of the ball's ground point (its shadow). */
  shadowU: number;
  shadowV: number;
}

export type Figure = PersonFigure | BallFigure;

/** The figures in front of the camera, sorted far to near (painter's order). Some may lie outside the image. */
export function figuresInView(camera: PinholeCamera, state: MatchState): Figure[] {
  const out: Figure[] = [];
  for (const p of state.people) {
    const foot = projectPoint(camera, [p.xM, p.yM, 0]);
    const top = projectPoint(camera, [p.xM, p.yM, p.heightM]);
    if (foot.depthM < MIN_DEPTH_M || top.depthM < MIN_DEPTH_M) continue;
    const pxPerM = (foot.v - top.v) / p.heightM;
    if (!(pxPerM > 0)) continue;
    const half = PERSON_HALF_WIDTH_M * pxPerM;
    out.push({
      kind: 'person',
      id: p.id,
      classId: CLASS_IDS[p.role],
      depthM: foot.depthM,
      person: p,
      footU: foot.u,
      footV: foot.v,
      topU: top.u,
      topV: top.v,
      pxPerM,
      box: {
        left: Math.min(foot.u, top.u) - half,
        right: Math.max(foot.u, top.u) + half,
        top: top.v,
        bottom: foot.v + 0.5,
      },
    });
  }
  const b = state.ball;
  const c = projectPoint(camera, [b.xM, b.yM, b.zM + BALL_RADIUS_M]);
  const s = projectPoint(camera, [b.xM, b.yM, 0]);
  if (c.depthM > MIN_DEPTH_M && s.depthM > MIN_DEPTH_M) {
    const radiusPx = Math.max(1, (camera.fx * BALL_RADIUS_M) / c.depthM);
    out.push({
      kind: 'ball',
      id: b.id,
      classId: CLASS_IDS.ball,
      depthM: c.depthM,
      ball: b,
      centreU: c.u,
      centreV: c.v,
      radiusPx,
      shadowU: s.u,
      shadowV: s.v,
      box: {
        left: c.u - radiusPx - 0.5,
        right: c.u + radiusPx + 0.5,
        top: c.v - radiusPx - 0.5,
        bottom: c.v + radiusPx + 0.5,
      },
    });
  }
  out.sort((p, q) => q.depthM - p.depthM);
  return out;
}

/** The box clipped to the image [0, width] × [0, height], or null when nothing is left. */
export function clipBox(box: Box, widthPx: number, heightPx: number): Box | null {
  const left = Math.max(0, box.left);
  const top = Math.max(0, box.top);
  const right = Math.min(widthPx, box.right);
  const bottom = Math.min(heightPx, box.bottom);
  if (right - left < 1 || bottom - top < 1) return null;
  return { left, top, right, bottom };
}

/**
 * The visible fraction of each figure's unclipped box: a 10 × 10 grid of
 * samples, a sample being hidden when it lies outside the image or inside the
 * box of a nearer figure. Index-aligned with `figures` (painter's order).
 */
export function visibilities(figures: Figure[], widthPx: number, heightPx: number): number[] {
  const n = 10;
  return figures.map((f, i) => {
    let visible = 0;
    for (let sy = 0; sy < n; sy++) {
      const y = f.box.top + ((sy + 0.5) / n) * (f.box.bottom - f.box.top);
      for (let sx = 0; sx < n; sx++) {
        const x = f.box.left + ((sx + 0.5) / n) * (f.box.right - f.box.left);
        if (x < 0 || y < 0 || x >= widthPx || y >= heightPx) continue;
        let hidden = false;
        for (let j = i + 1; j < figures.length && !hidden; j++) {
          const o = (figures[j] as Figure).box;
          hidden = x >= o.left && x <= o.right && y >= o.top && y <= o.bottom;
        }
        if (!hidden) visible++;
      }
    }
    return visible / (n * n);
  });
}
