/**
 * The pitch: a standard 105 × 68 m football field with the markings of the
 * IFAB Laws of the Game, Law 1 (line width 0.12 m, centre circle radius
 * 9.15 m, penalty area 16.5 × 40.32 m, goal area 5.5 × 18.32 m, penalty
 * mark 11 m from the goal line, corner arcs of 1 m, goals 7.32 × 2.44 m).
 * Coordinates: metres, origin at the centre spot, x along the length, y
 * across (see camera.ts).
 */

export const PITCH_LENGTH_M = 105;
export const PITCH_WIDTH_M = 68;
export const HALF_LENGTH_M = PITCH_LENGTH_M / 2;
export const HALF_WIDTH_M = PITCH_WIDTH_M / 2;
export const LINE_WIDTH_M = 0.12;
export const CENTRE_CIRCLE_RADIUS_M = 9.15;
export const PENALTY_AREA_DEPTH_M = 16.5;
export const PENALTY_AREA_HALF_WIDTH_M = 20.16;
export const GOAL_AREA_DEPTH_M = 5.5;
export const GOAL_AREA_HALF_WIDTH_M = 9.16;
export const PENALTY_MARK_DISTANCE_M = 11;
export const CORNER_ARC_RADIUS_M = 1;
export const GOAL_HALF_WIDTH_M = 3.66;
export const GOAL_HEIGHT_M = 2.44;

const HALF_LINE = LINE_WIDTH_M / 2;

function onSegmentX(x: number, y: number, x0: number, x1: number, yLine: number): boolean {
  return x >= x0 - HALF_LINE && x <= x1 + HALF_LINE && Math.abs(y - yLine) <= HALF_LINE;
}

function onSegmentY(x: number, y: number, xLine: number, y0: number, y1: number): boolean {
  return y >= y0 - HALF_LINE && y <= y1 + HALF_LINE && Math.abs(x - xLine) <= HALF_LINE;
}

/**
 * Whether the pitch point (x, y) in metres lies on a painted line (touch
 * and goal lines, halfway line, centre circle and spot, penalty and goal
 * areas, penalty marks and arcs, corner arcs).
 */
export function isOnPitchMarking(x: number, y: number): boolean {
  const ax = Math.abs(x);
  const ay = Math.abs(y);
  if (ax > HALF_LENGTH_M + HALF_LINE || ay > HALF_WIDTH_M + HALF_LINE) return false;
  // Outer boundary.
  if (Math.abs(ay - HALF_WIDTH_M) <= HALF_LINE) return true;
  if (Math.abs(ax - HALF_LENGTH_M) <= HALF_LINE) return true;
  // Halfway line, centre circle, centre mark.
  if (ax <= HALF_LINE) return true;
  const r = Math.hypot(x, y);
  if (Math.abs(r - CENTRE_CIRCLE_RADIUS_M) <= HALF_LINE || r <= 0.15) return true;
  // Symmetric end features, using the end at +x.
  const dx = HALF_LENGTH_M - ax; // distance from the goal line into the pitch
  if (onSegmentY(dx, ay, PENALTY_AREA_DEPTH_M, 0, PENALTY_AREA_HALF_WIDTH_M)) return true;
  if (onSegmentX(dx, ay, 0, PENALTY_AREA_DEPTH_M, PENALTY_AREA_HALF_WIDTH_M)) return true;
  if (onSegmentY(dx, ay, GOAL_AREA_DEPTH_M, 0, GOAL_AREA_HALF_WIDTH_M)) return true;
  if (onSegmentX(dx, ay, 0, GOAL_AREA_DEPTH_M, GOAL_AREA_HALF_WIDTH_M)) return true;
  const pm = Math.hypot(dx - PENALTY_MARK_DISTANCE_M, y);
  if (pm <= 0.15) return true;
  if (dx > PENALTY_AREA_DEPTH_M && Math.abs(pm - CENTRE_CIRCLE_RADIUS_M) <= HALF_LINE) return true;
  const corner = Math.hypot(dx, HALF_WIDTH_M - ay);
  if (Math.abs(corner - CORNER_ARC_RADIUS_M) <= HALF_LINE) return true;
  return false;
}

/** The four corners of the pitch grown by `marginM` on each side, metres, counter-clockwise. */
export function pitchCorners(marginM = 0): [number, number][] {
  const hx = HALF_LENGTH_M + marginM;
  const hy = HALF_WIDTH_M + marginM;
  return [
    [-hx, -hy],
    [hx, -hy],
    [hx, hy],
    [-hx, hy],
  ];
}
