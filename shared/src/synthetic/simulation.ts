/**
 * A small deterministic football simulation that moves 22 players, a
 * referee and a ball plausibly: both teams keep a 4-4-2 shape that shifts
 * with the ball, the two nearest defenders press the ball, the holder
 * dribbles towards goal then passes (ground or lofted) or shoots, a loose
 * ball is claimed by whoever reaches it first, and goalkeepers follow the ball
 * along their line. Everything random comes from one seeded {@link Prng}, so
 * the same (seed, fps) gives the same match.
 */
import { HALF_LENGTH_M, HALF_WIDTH_M } from './pitch.ts';
import { Prng } from './prng.ts';

export type Role = 'player' | 'goalkeeper' | 'referee';
export type Team = 'A' | 'B';

/** One person on the pitch at one instant. */
export interface PersonState {
  /** Identity, stable over the clip: 1–11 team A (1 = goalkeeper), 12–22 team B (12 = goalkeeper), 23 referee. */
  id: number;
  role: Role;
  /** Team; `null` for the referee. */
  team: Team | null;
  xM: number;
  yM: number;
  /** Standing height, metres. */
  heightM: number;
  /** Running-cycle phase in radians (for leg drawing). */
  stridePhase: number;
  speedMps: number;
}

export interface BallState {
  /** Ball identity in the ground truth (24). */
  id: number;
  xM: number;
  yM: number;
  /** Height of the ball's lowest point above the grass, metres. */
  zM: number;
}

export interface MatchState {
  /** Frame index from 0. */
  frame: number;
  timeS: number;
  people: PersonState[];
  ball: BallState;
}

export const BALL_ID = 24;
export const REFEREE_ID = 23;
export const BALL_RADIUS_M = 0.11;

interface Agent extends PersonState {
  homeX: number;
  homeY: number;
  vx: number;
  vy: number;
  wanderPhase: number;
  wanderFreq: number;
}

type BallMode =
  | { kind: 'held'; holder: Agent; untilS: number }
  | {
      kind: 'flight';
      x0: number;
      y0: number;
      x1: number;
      y1: number;
      z0: number;
      apexM: number;
      startS: number;
      durationS: number;
      receiver: Agent | null;
      shot: boolean;
    }
  | { kind: 'loose'; vx: number; vy: number };

/** 4-4-2 home positions of a team attacking towards +x, metres. */
const FORMATION: [number, number][] = [
  [-50, 0],
  [-36, -24],
  [-38, -8],
  [-38, 8],
  [-36, 24],
  [-18, -24],
  [-20, -8],
  [-20, 8],
  [-18, 24],
  [-4, -9],
  [-4, 9],
];

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

export class MatchSimulation {
  private readonly rng: Prng;
  private readonly dtS: number;
  private readonly agents: Agent[] = [];
  private readonly ball = { x: 0, y: 0, z: 0 };
  private mode: BallMode;
  private frame = 0;

  /**
   * @param seed any integer; the same seed and fps give the same match.
   * @param fps frames per second; one {@link step} advances 1/fps seconds.
   */
  constructor(seed: number, fps: number) {
    this.rng = new Prng(seed * 7919 + 1);
    this.dtS = 1 / fps;
    for (const team of ['A', 'B'] as const) {
      const dir = team === 'A' ? 1 : -1;
      FORMATION.forEach(([hx, hy], i) => {
        const id = (team === 'A' ? 1 : 12) + i;
        const homeX = hx * dir;
        const homeY = hy * dir;
        this.agents.push({
          id,
          role: i === 0 ? 'goalkeeper' : 'player',
          team,
          homeX,
          homeY,
          xM: homeX + this.rng.range(-2, 2),
          yM: homeY + this.rng.range(-2, 2),
          heightM: this.rng.range(1.72, 1.92),
          stridePhase: this.rng.range(0, Math.PI * 2),
          speedMps: 0,
          vx: 0,
          vy: 0,
          wanderPhase: this.rng.range(0, Math.PI * 2),
          wanderFreq: this.rng.range(0.05, 0.15),
        });
      });
    }
    this.agents.push({
      id: REFEREE_ID,
      role: 'referee',
      team: null,
      homeX: -8,
      homeY: -8,
      xM: -8,
      yM: -8,
      heightM: 1.8,
      stridePhase: 0,
      speedMps: 0,
      vx: 0,
      vy: 0,
      wanderPhase: 0,
      wanderFreq: 0.1,
    });
    const kicker = this.agents.find((a) => a.id === 10) as Agent;
    kicker.xM = -0.5;
    kicker.yM = 0;
    this.mode = { kind: 'held', holder: kicker, untilS: 1 };
    this.placeHeldBall(kicker);
  }

  /** The state of the current frame (a fresh copy). */
  state(): MatchState {
    return {
      frame: this.frame,
      timeS: this.frame * this.dtS,
      people: this.agents.map((a) => ({
        id: a.id,
        role: a.role,
        team: a.team,
        xM: a.xM,
        yM: a.yM,
        heightM: a.heightM,
        stridePhase: a.stridePhase,
        speedMps: a.speedMps,
      })),
      ball: { id: BALL_ID, xM: this.ball.x, yM: this.ball.y, zM: this.ball.z },
    };
  }

  /** Advances one frame. */
  step(): void {
    const t = this.frame * this.dtS;
    this.updateBall(t);
    this.moveAgents(t);
    if (this.mode.kind === 'held') this.placeHeldBall(this.mode.holder);
    this.frame++;
  }

  private placeHeldBall(holder: Agent): void {
    const dir = holder.team === 'A' ? 1 : -1;
    const speed = Math.hypot(holder.vx, holder.vy);
    const fx = speed > 0.3 ? holder.vx / speed : dir;
    const fy = speed > 0.3 ? holder.vy / speed : 0;
    this.ball.x = holder.xM + fx * 0.5;
    this.ball.y = holder.yM + fy * 0.5;
    this.ball.z = 0;
  }

  private updateBall(t: number): void {
    const mode = this.mode;
    if (mode.kind === 'held' && t >= mode.untilS) this.release(mode.holder, t);
    else if (mode.kind === 'flight') {
      const f = Math.min(1, (t - mode.startS) / mode.durationS);
      this.ball.x = mode.x0 + (mode.x1 - mode.x0) * f;
      this.ball.y = mode.y0 + (mode.y1 - mode.y0) * f;
      this.ball.z = Math.max(0, mode.z0 * (1 - f) + 4 * mode.apexM * f * (1 - f));
      if (f >= 1) {
        const speed = Math.hypot(mode.x1 - mode.x0, mode.y1 - mode.y0) / mode.durationS;
        const k = (0.35 * speed) / Math.max(1e-6, Math.hypot(mode.x1 - mode.x0, mode.y1 - mode.y0));
        this.mode = { kind: 'loose', vx: (mode.x1 - mode.x0) * k, vy: (mode.y1 - mode.y0) * k };
        this.ball.z = 0;
      }
    } else if (mode.kind === 'loose') {
      this.ball.x += mode.vx * this.dtS;
      this.ball.y += mode.vy * this.dtS;
      if (Math.abs(this.ball.x) > HALF_LENGTH_M - 0.5) mode.vx = -mode.vx;
      if (Math.abs(this.ball.y) > HALF_WIDTH_M - 0.5) mode.vy = -mode.vy;
      this.ball.x = clamp(this.ball.x, -HALF_LENGTH_M + 0.5, HALF_LENGTH_M - 0.5);
      this.ball.y = clamp(this.ball.y, -HALF_WIDTH_M + 0.5, HALF_WIDTH_M - 0.5);
      const decay = Math.max(0, 1 - 1.2 * this.dtS);
      mode.vx *= decay;
      mode.vy *= decay;
      let best: Agent | null = null;
      let bestD = 1.0;
      for (const a of this.agents) {
        if (a.role === 'referee') continue;
        const d = Math.hypot(a.xM - this.ball.x, a.yM - this.ball.y);
        if (d < bestD) {
          bestD = d;
          best = a;
        }
      }
      if (best)
        this.mode = {
          kind: 'held',
          holder: best,
          untilS: t + (best.role === 'goalkeeper' ? this.rng.range(1.5, 2.5) : this.rng.range(0.6, 2.8)),
        };
    }
  }

  /** The holder passes, shoots or (goalkeeper) kicks long. */
  private release(holder: Agent, t: number): void {
    const dir = holder.team === 'A' ? 1 : -1;
    const goalX = HALF_LENGTH_M * dir;
    const toGoal = Math.hypot(goalX - holder.xM, holder.yM);
    if (holder.role !== 'goalkeeper' && toGoal < 28 && this.rng.next() < 0.55) {
      const keeper = this.agents.find((a) => a.role === 'goalkeeper' && a.team !== holder.team) as Agent;
      const x1 = keeper.xM - dir * this.rng.range(0.3, 1.2);
      const y1 = keeper.yM + this.rng.range(-1.5, 1.5);
      const dist = Math.hypot(x1 - this.ball.x, y1 - this.ball.y);
      this.mode = {
        kind: 'flight',
        x0: this.ball.x,
        y0: this.ball.y,
        x1,
        y1,
        z0: 0,
        apexM: this.rng.range(0.3, 1.8),
        startS: t,
        durationS: dist / this.rng.range(20, 28),
        receiver: keeper,
        shot: true,
      };
      return;
    }
    const mates = this.agents.filter((a) => a.team === holder.team && a !== holder && a.role === 'player');
    const weights = mates.map((m) => {
      const d = Math.hypot(m.xM - holder.xM, m.yM - holder.yM);
      if (d < 6 || d > (holder.role === 'goalkeeper' ? 60 : 40)) return 0.01;
      const forward = (m.xM - holder.xM) * dir;
      return Math.max(0.05, 1 + forward / 15);
    });
    const total = weights.reduce((a, b) => a + b, 0);
    let r = this.rng.next() * total;
    let receiver = mates[0] as Agent;
    for (let i = 0; i < mates.length; i++) {
      r -= weights[i] as number;
      if (r <= 0) {
        receiver = mates[i] as Agent;
        break;
      }
    }
    const lofted = holder.role === 'goalkeeper' || this.rng.next() < 0.25;
    const speed = lofted ? this.rng.range(16, 22) : this.rng.range(11, 16);
    let x1 = receiver.xM + receiver.vx * 1.0;
    let y1 = receiver.yM + receiver.vy * 1.0;
    x1 = clamp(x1, -HALF_LENGTH_M + 1, HALF_LENGTH_M - 1);
    y1 = clamp(y1, -HALF_WIDTH_M + 1, HALF_WIDTH_M - 1);
    const dist = Math.hypot(x1 - this.ball.x, y1 - this.ball.y);
    this.mode = {
      kind: 'flight',
      x0: this.ball.x,
      y0: this.ball.y,
      x1,
      y1,
      z0: 0,
      apexM: lofted ? dist * this.rng.range(0.1, 0.2) : 0,
      startS: t,
      durationS: Math.max(0.3, dist / speed),
      receiver,
      shot: false,
    };
  }

  private moveAgents(t: number): void {
    const bx = this.ball.x;
    const by = this.ball.y;
    const mode = this.mode;
    const holder = mode.kind === 'held' ? mode.holder : null;
    const attacking: Team | null = holder?.team ?? (mode.kind === 'flight' ? (mode.receiver?.team ?? null) : null);
    // The two outfield players of each non-attacking team nearest to the ball press it.
    const pressers = new Set<Agent>();
    for (const team of ['A', 'B'] as const) {
      if (team === attacking) continue;
      const n = team === attacking ? 0 : mode.kind === 'loose' ? 1 : 2;
      const byDistance = this.agents
        .filter((a) => a.team === team && a.role === 'player')
        .sort((p, q) => Math.hypot(p.xM - bx, p.yM - by) - Math.hypot(q.xM - bx, q.yM - by));
      for (const a of byDistance.slice(0, n)) pressers.add(a);
    }
    if (mode.kind === 'loose' && attacking === null) {
      // Nearest of each team chases a loose ball.
      for (const team of ['A', 'B'] as const) {
        const nearest = this.agents
          .filter((a) => a.team === team && a.role === 'player')
          .sort((p, q) => Math.hypot(p.xM - bx, p.yM - by) - Math.hypot(q.xM - bx, q.yM - by))[0];
        if (nearest) pressers.add(nearest);
      }
    }
    for (const a of this.agents) {
      let tx: number;
      let ty: number;
      let maxSpeed = 4.2;
      const dir = a.team === 'A' ? 1 : -1;
      if (a.role === 'referee') {
        tx = bx * 0.85 - 6;
        ty = by * 0.7 - 7;
        maxSpeed = 6;
      } else if (a.role === 'goalkeeper') {
        tx = a.homeX + dir * clamp((bx * dir + HALF_LENGTH_M) / 12, 0, 6);
        ty = clamp(by * 0.12, -3, 3);
        maxSpeed = 4;
      } else if (a === holder) {
        tx = a.xM + dir * 6;
        ty = a.yM + Math.sin(t * 0.7 + a.wanderPhase) * 4 - a.yM * 0.1;
        maxSpeed = 5.2;
      } else if (mode.kind === 'flight' && a === mode.receiver) {
        tx = mode.x1;
        ty = mode.y1;
        maxSpeed = 6.5;
      } else if (pressers.has(a)) {
        tx = bx;
        ty = by;
        maxSpeed = 6.8;
      } else {
        const inPossession = attacking === a.team;
        const shiftX = bx * 0.55 + (inPossession ? dir * 8 : -dir * 4);
        tx = a.homeX * 0.8 + shiftX + Math.sin(t * a.wanderFreq * 6.28 + a.wanderPhase) * 3;
        ty = a.homeY * 0.85 + by * 0.3 + Math.cos(t * a.wanderFreq * 5.1 + a.wanderPhase) * 3;
      }
      tx = clamp(tx, -HALF_LENGTH_M + 0.3, HALF_LENGTH_M - 0.3);
      ty = clamp(ty, -HALF_WIDTH_M + 0.3, HALF_WIDTH_M - 0.3);
      // Arrive behaviour with a speed cap and an acceleration cap (4 m/s²).
      let dvx = (tx - a.xM) * 1.2;
      let dvy = (ty - a.yM) * 1.2;
      const ds = Math.hypot(dvx, dvy);
      if (ds > maxSpeed) {
        dvx *= maxSpeed / ds;
        dvy *= maxSpeed / ds;
      }
      let ax = (dvx - a.vx) / this.dtS;
      let ay = (dvy - a.vy) / this.dtS;
      const am = Math.hypot(ax, ay);
      if (am > 4) {
        ax *= 4 / am;
        ay *= 4 / am;
      }
      a.vx += ax * this.dtS;
      a.vy += ay * this.dtS;
      a.xM += a.vx * this.dtS;
      a.yM += a.vy * this.dtS;
      a.speedMps = Math.hypot(a.vx, a.vy);
      a.stridePhase = (a.stridePhase + (a.speedMps * this.dtS * 2 * Math.PI) / 1.6) % (2 * Math.PI);
    }
  }
}
