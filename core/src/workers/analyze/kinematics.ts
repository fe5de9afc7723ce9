import type { Track } from '../track/tracks-format.ts';
import type { PositionSpace } from './pitch-space.ts';

/** Options of {@link trackKinematics}. */
export interface KinematicsOptions {
  /** Centred moving average of positions before differentiating, seconds. @defaultValue 0.5 */
  smoothingSeconds?: number;
  /** Speed from which running counts as a sprint, in the space's unit per second. @defaultValue 7 (m/s, 25.2 km/h) */
  sprintSpeed?: number;
  /** Shortest sprint, seconds. @defaultValue 1 */
  minSprintSeconds?: number;
  /** Speeds above this are tracking glitches and are not counted. @defaultValue 12 (m/s) */
  maxPlausibleSpeed?: number;
  /**
   * Top speed is the largest displacement over this many seconds of continuous track, divided by
   * it: a frame-to-frame speed carries the foot point's jitter (on a far touchline a pixel is tens
   * of centimetres), which the short smoothing does not remove. @defaultValue 1
   */
  topSpeedWindowSeconds?: number;
}

/** Movement figures of one track. */
export interface TrackKinematics {
  /** Positions (foot points) per observed frame, smoothed, in the space's unit. */
  positions: { frame: number; x: number; y: number }[];
  distance: number;
  maxSpeed: number;
  meanSpeed: number;
  sprints: number;
  sprintDistance: number;
  /** Seconds the track was followed. */
  durationSeconds: number;
}

/**
 * Distance, speeds and sprints of a track from its foot points (bottom
 * centre of each box) mapped into `space`, smoothed by a centred moving
 * average; speeds from consecutive frames; a sprint is a run of frames at or
 * above `sprintSpeed` lasting at least `minSprintSeconds` (the usual 25 km/h
 * threshold in football tracking reports). Steps faster than
 * `maxPlausibleSpeed` (id switches, mapping noise) are left out of the distance.
 * The top speed is measured over `topSpeedWindowSeconds` of continuous track
 * (over single steps only for a track shorter than that).
 */
export function trackKinematics(
  track: Track,
  space: PositionSpace,
  fps: number,
  options: KinematicsOptions = {},
): TrackKinematics {
  const sprintSpeed = options.sprintSpeed ?? 7;
  const maxPlausible = options.maxPlausibleSpeed ?? (space.unit === 'm' ? 12 : Number.POSITIVE_INFINITY);
  const minSprintFrames = Math.max(1, Math.round((options.minSprintSeconds ?? 1) * fps));
  const raw: { frame: number; x: number; y: number }[] = [];
  for (const f of track.frames) {
    const p = space.fromImage((f.box[0] + f.box[2]) / 2, f.box[3]);
    if (p) raw.push({ frame: f.frame, x: p[0], y: p[1] });
  }
  const half = Math.max(0, Math.round(((options.smoothingSeconds ?? 0.5) * fps) / 2));
  // Centred moving average over a symmetric window that shrinks at the ends
  // and at gaps, so straight runs keep their length.
  const positions = raw.map((p, i) => {
    let m = 0;
    while (
      m < half &&
      i - m - 1 >= 0 &&
      i + m + 1 < raw.length &&
      p.frame - raw[i - m - 1]!.frame === m + 1 &&
      raw[i + m + 1]!.frame - p.frame === m + 1
    ) {
      m += 1;
    }
    let x = 0;
    let y = 0;
    for (let k = i - m; k <= i + m; k++) {
      x += raw[k]!.x;
      y += raw[k]!.y;
    }
    return { frame: p.frame, x: x / (2 * m + 1), y: y / (2 * m + 1) };
  });
  let distance = 0;
  let maxSpeed = 0;
  let movingSeconds = 0;
  let sprints = 0;
  let sprintDistance = 0;
  let runFrames = 0;
  let runDistance = 0;
  const endRun = () => {
    if (runFrames >= minSprintFrames) {
      sprints += 1;
      sprintDistance += runDistance;
    }
    runFrames = 0;
    runDistance = 0;
  };
  // jumpsBefore[i]: implausible steps among the first i (step k joins positions k and k + 1); the
  // top speed's spans may not hold one.
  const jumpsBefore = [0];
  for (let i = 1; i < positions.length; i++) {
    const a = positions[i - 1]!;
    const b = positions[i]!;
    const dtSeconds = (b.frame - a.frame) / fps;
    const step = Math.hypot(b.x - a.x, b.y - a.y);
    const speed = step / dtSeconds;
    jumpsBefore.push(jumpsBefore[i - 1]! + (speed > maxPlausible ? 1 : 0));
    if (b.frame - a.frame > 1 || speed > maxPlausible) {
      endRun();
      continue;
    }
    distance += step;
    movingSeconds += dtSeconds;
    maxSpeed = Math.max(maxSpeed, speed);
    if (speed >= sprintSpeed) {
      runFrames += 1;
      runDistance += step;
    } else endRun();
  }
  endRun();
  const topSpeed = windowedTopSpeed(positions, jumpsBefore, fps, options.topSpeedWindowSeconds ?? 1, maxPlausible);
  const durationSeconds = track.frames.length > 0 ? (track.frames.at(-1)!.frame - track.frames[0]!.frame + 1) / fps : 0;
  return {
    positions,
    distance,
    maxSpeed: topSpeed ?? maxSpeed,
    meanSpeed: movingSeconds > 0 ? distance / movingSeconds : 0,
    sprints,
    sprintDistance,
    durationSeconds,
  };
}

/**
 * Largest `|p(t + w) − p(t)| / w` over the spans of exactly `w` seconds (rounded to frames) of
 * continuous track: no frame gap and no step faster than `maxPlausible` inside (an id switch to a
 * player a few metres away is such a step even when the span's mean speed looks possible), span
 * speeds above `maxPlausible` left out too; null when the track has no such span. `jumpsBefore[i]`:
 * how many of the first `i` steps are faster than `maxPlausible`.
 */
function windowedTopSpeed(
  positions: readonly { frame: number; x: number; y: number }[],
  jumpsBefore: readonly number[],
  fps: number,
  windowSeconds: number,
  maxPlausible: number,
): number | null {
  const span = Math.max(1, Math.round(windowSeconds * fps));
  let top: number | null = null;
  for (let i = 0; i + span < positions.length; i++) {
    const a = positions[i]!;
    const b = positions[i + span]!;
    if (b.frame - a.frame !== span || jumpsBefore[i + span]! > jumpsBefore[i]!) continue;
    const speed = Math.hypot(b.x - a.x, b.y - a.y) / (span / fps);
    if (speed <= maxPlausible) top = Math.max(top ?? 0, speed);
  }
  return top;
}
