/**
 * Colours of the synthetic match, chosen per seed from fixed palettes: two
 * team kits that differ clearly, goalkeepers' kits unlike either team (from
 * a palette no team uses), the referee in black, skin tones and the grass
 * shade.
 */
import { Prng } from './prng.ts';

export type Rgb = readonly [number, number, number];

export interface Kit {
  shirt: Rgb;
  shorts: Rgb;
  socks: Rgb;
}

export interface Appearance {
  teamA: Kit;
  teamB: Kit;
  keeperA: Kit;
  keeperB: Kit;
  referee: Kit;
  /** Skin tone per person id (1–23). */
  skin: Map<number, Rgb>;
  /** Hair colour per person id. */
  hair: Map<number, Rgb>;
  grass: Rgb;
  /** Seed for the background textures. */
  textureSeed: number;
}

// Each shirt colour belongs to one role across all seeds (teams, goalkeepers, referee), so that
// a detector trained on several seeds can tell the roles apart by kit, as people do.
const TEAM_SHIRTS: Rgb[] = [
  [200, 30, 35],
  [25, 60, 170],
  [240, 240, 240],
  [110, 180, 235],
  [240, 120, 20],
  [110, 40, 140],
  [120, 20, 45],
];
const SHORTS: Rgb[] = [
  [245, 245, 245],
  [25, 25, 30],
  [25, 50, 140],
];
const KEEPER_SHIRTS: Rgb[] = [
  [40, 200, 90],
  [250, 100, 180],
  [130, 130, 130],
  [250, 210, 30],
];
/** The referee wears black. */
const REFEREE_SHIRT: Rgb = [15, 15, 15];
const SKIN: Rgb[] = [
  [235, 200, 170],
  [215, 170, 130],
  [180, 130, 95],
  [130, 90, 60],
  [90, 60, 40],
];
const HAIR: Rgb[] = [
  [30, 25, 20],
  [70, 45, 25],
  [150, 110, 60],
  [20, 20, 20],
];

function distance(a: Rgb, b: Rgb): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

function pickDistinct(rng: Prng, palette: Rgb[], avoid: Rgb[], minDistance: number): Rgb {
  const ok = palette.filter((c) => avoid.every((a) => distance(a, c) >= minDistance));
  return rng.pick(ok.length > 0 ? ok : palette);
}

/** The colours of the match for a seed. */
export function chooseAppearance(seed: number): Appearance {
  const rng = new Prng(seed * 104729 + 17);
  const shirtA = rng.pick(TEAM_SHIRTS);
  const shirtB = pickDistinct(rng, TEAM_SHIRTS, [shirtA], 150);
  const kit = (shirt: Rgb): Kit => {
    const shorts = pickDistinct(rng, SHORTS, [], 0);
    return { shirt, shorts, socks: rng.next() < 0.5 ? shirt : shorts };
  };
  const teamA = kit(shirtA);
  const teamB = kit(shirtB);
  const keeperShirtA = pickDistinct(rng, KEEPER_SHIRTS, [shirtA, shirtB], 120);
  const keeperShirtB = pickDistinct(rng, KEEPER_SHIRTS, [shirtA, shirtB, keeperShirtA], 120);
  const skin = new Map<number, Rgb>();
  const hair = new Map<number, Rgb>();
  for (let id = 1; id <= 23; id++) {
    skin.set(id, rng.pick(SKIN));
    hair.set(id, rng.pick(HAIR));
  }
  const g = rng.range(-12, 12);
  return {
    teamA,
    teamB,
    keeperA: { shirt: keeperShirtA, shorts: keeperShirtA, socks: keeperShirtA },
    keeperB: { shirt: keeperShirtB, shorts: [25, 25, 30], socks: keeperShirtB },
    referee: { shirt: REFEREE_SHIRT, shorts: [15, 15, 15], socks: [15, 15, 15] },
    skin,
    hair,
    grass: [Math.round(60 + g), Math.round(135 + g * 1.5), Math.round(50 + g / 2)],
    textureSeed: Math.floor(rng.next() * 2 ** 31),
  };
}

/** The kit a person wears. */
export function kitOf(appearance: Appearance, role: string, team: string | null): Kit {
  if (role === 'referee') return appearance.referee;
  if (role === 'goalkeeper') return team === 'A' ? appearance.keeperA : appearance.keeperB;
  return team === 'A' ? appearance.teamA : appearance.teamB;
}
