/** A ball candidate: one detector box of class `ball` in one analysed frame. */
export interface BallCandidate {
  /** Analysed frame index. */
  frame: number;
  /** Centre, px (panorama/source pixels). */
  x: number;
  y: number;
  /** Box side (mean of width and height), px. */
  sizePx: number;
  score: number;
}

/** Why candidates were left out by {@link filterBallCandidates}. */
export interface CandidateRejections {
  lowScore: number;
  offPitch: number;
  /** Candidates that stayed in place (pitch-line marks, spots, a boot, a sponsor logo). */
  static: number;
  /** Candidates beyond the `topKPerFrame` best-scored of their frame (absent in files before 2026-11-29). */
  beyondTopK?: number;
}

/** Options of {@link filterBallCandidates}. */
export interface CandidateFilterOptions {
  /** Analysed frames per second. */
  fps: number;
  /** Lowest score considered. @defaultValue 0 (the detector's floor) */
  minScore?: number;
  /** Whether a candidate's point (px) in its analysed frame lies on the pitch (with a margin); absent: everywhere. */
  onPitch?: (x: number, y: number, frame: number) => boolean;
  /**
   * A candidate that has a candidate within `staticRadiusPx` in at least this many seconds' worth of
   * the frames around it (±`staticSeconds`) has not moved: a false alarm. @defaultValue 1
   */
  staticSeconds?: number;
  /** Radius within which two candidates are "the same place", px. @defaultValue max(2, 0.75 · box size) */
  staticRadiusPx?: number;
  /**
   * Frames before this one are context (the previous segment's end, `BallCarry`): their candidates
   * are filtered like the others but not counted in `rejected`. @defaultValue 0
   */
  contextFrames?: number;
  /**
   * The most candidates a frame keeps after the other tests, the best-scored. There is one ball: a
   * detector that leaves more is guessing (a user's model put ~144 "balls" a frame along the pitch
   * lines of a real clip), and the tracker's optimal assignment per frame is cubic in them (100 a
   * frame: 1.4 s of tracking per 7 s of frames). @defaultValue 10
   */
  topKPerFrame?: number;
}

/**
 * Leaves out the ball candidates that cannot be the ball in play: below `minScore`, off the pitch,
 * static — a candidate with another candidate at the same place (within the radius) in at least
 * N = round(`staticSeconds`·fps) of the 2N frames around it — or, of what is left, beyond the
 * `topKPerFrame` best-scored of their frame. The ball in play moves; pitch-line
 * marks, the penalty spot and logos that a detector mistakes for it do not. (A ball at rest for a
 * set piece is dropped too and bridged by interpolation when play resumes.)
 *
 * @param candidates - every candidate of the clip, any order.
 * @returns the kept candidates (same objects, input order) and the counts of each rejection.
 */
export function filterBallCandidates(
  candidates: readonly BallCandidate[],
  options: CandidateFilterOptions,
): { kept: BallCandidate[]; rejected: CandidateRejections } {
  const rejected: Required<CandidateRejections> = { lowScore: 0, offPitch: 0, static: 0, beyondTopK: 0 };
  const minScore = options.minScore ?? 0;
  const counted = (c: BallCandidate) => (c.frame >= (options.contextFrames ?? 0) ? 1 : 0);
  const pool: BallCandidate[] = [];
  for (const c of candidates) {
    if (c.score < minScore) rejected.lowScore += counted(c);
    else if (options.onPitch && !options.onPitch(c.x, c.y, c.frame)) rejected.offPitch += counted(c);
    else pool.push(c);
  }
  const windowFrames = Math.max(2, Math.round((options.staticSeconds ?? 1) * options.fps));
  // Spatial hash per frame: cell → candidates, cells of the largest radius in use.
  const radiusOf = (c: BallCandidate) => options.staticRadiusPx ?? Math.max(2, 0.75 * c.sizePx);
  const cell = Math.max(1, ...pool.map(radiusOf));
  const byFrame = new Map<number, Map<string, BallCandidate[]>>();
  for (const c of pool) {
    let grid = byFrame.get(c.frame);
    if (!grid) {
      grid = new Map();
      byFrame.set(c.frame, grid);
    }
    const key = `${Math.floor(c.x / cell)},${Math.floor(c.y / cell)}`;
    const list = grid.get(key);
    if (list) list.push(c);
    else grid.set(key, [c]);
  }
  const near = (frame: number, c: BallCandidate, radius: number): boolean => {
    const grid = byFrame.get(frame);
    if (!grid) return false;
    const cx = Math.floor(c.x / cell);
    const cy = Math.floor(c.y / cell);
    for (let dx = -1; dx <= 1; dx++)
      for (let dy = -1; dy <= 1; dy++) {
        for (const o of grid.get(`${cx + dx},${cy + dy}`) ?? []) {
          if (Math.hypot(o.x - c.x, o.y - c.y) <= radius) return true;
        }
      }
    return false;
  };
  const kept: BallCandidate[] = [];
  for (const c of pool) {
    const radius = radiusOf(c);
    let same = 0;
    for (let f = c.frame - windowFrames; f <= c.frame + windowFrames && same < windowFrames; f++) {
      if (f !== c.frame && near(f, c, radius)) same += 1;
    }
    if (same >= windowFrames) rejected.static += counted(c);
    else kept.push(c);
  }
  const topK = options.topKPerFrame ?? 10;
  const perFrame = new Map<number, BallCandidate[]>();
  for (const c of kept) {
    const list = perFrame.get(c.frame);
    if (list) list.push(c);
    else perFrame.set(c.frame, [c]);
  }
  const beyond = new Set<BallCandidate>();
  for (const list of perFrame.values()) {
    if (list.length <= topK) continue;
    for (const c of [...list].sort((a, b) => b.score - a.score).slice(topK)) {
      beyond.add(c);
      rejected.beyondTopK += counted(c);
    }
  }
  return { kept: beyond.size > 0 ? kept.filter((c) => !beyond.has(c)) : kept, rejected };
}
