/**
 * Draws people and the ball over a background copy: shadows first (they lie
 * on the grass), then the figures far to near so nearer ones hide farther
 * ones. A person is an upright billboard along the projected vertical through
 * the feet: boots, socks, legs in stride, shorts, shirt with arms, neck and
 * head, each band at a fixed fraction of the body height.
 */
import { type Appearance, kitOf, type Rgb } from './appearance.ts';
import type { BallFigure, Figure, PersonFigure } from './figures.ts';
import { darkenEllipse, fillDisc, fillSpan, type RgbFrame } from './raster.ts';

const BOOTS: Rgb = [25, 25, 25];
const BALL_LIGHT: Rgb = [250, 250, 250];
const BALL_DARK: Rgb = [150, 150, 155];

function shade(c: Rgb, k: number): Rgb {
  return [c[0] * k, c[1] * k, c[2] * k];
}

function drawPerson(frame: RgbFrame, f: PersonFigure, look: Appearance): void {
  const p = f.person;
  const kit = kitOf(look, p.role, p.team);
  const skin = look.skin.get(p.id) ?? [200, 160, 120];
  const hair = look.hair.get(p.id) ?? [30, 25, 20];
  const heightPx = f.footV - f.topV;
  const s = f.pxPerM;
  const swing = Math.sin(p.stridePhase) * Math.min(1, p.speedMps / 3);
  const shirtDark = shade(kit.shirt, 0.82);
  const headR = 0.11 / p.heightM; // head radius as a height fraction
  const headC = 1 - headR;
  const y0 = Math.max(0, Math.ceil(f.topV));
  const y1 = Math.min(frame.heightPx - 1, Math.floor(f.footV));
  for (let y = y0; y <= y1; y++) {
    const r = (f.footV - y) / heightPx; // 0 at the feet, 1 at the top of the head
    const cu = f.footU + (f.topU - f.footU) * r;
    if (r < 0.47) {
      const spread = 0.08 + 0.13 * swing * (1 - r / 0.47);
      const colour = r < 0.04 ? BOOTS : r < 0.27 ? kit.socks : skin;
      const half = 0.065 * s;
      fillSpan(frame, y, cu - spread * s - half, cu - spread * s + half, colour);
      fillSpan(frame, y, cu + spread * s - half, cu + spread * s + half, colour);
    }
    if (r >= 0.44 && r < 0.56) fillSpan(frame, y, cu - 0.19 * s, cu + 0.19 * s, kit.shorts);
    if (r >= 0.46 && r < 0.8) {
      const colour = r >= 0.68 ? kit.shirt : skin;
      fillSpan(frame, y, cu - 0.29 * s, cu - 0.21 * s, colour);
      fillSpan(frame, y, cu + 0.21 * s, cu + 0.29 * s, r >= 0.68 ? shirtDark : skin);
    }
    if (r >= 0.56 && r < 0.82) {
      fillSpan(frame, y, cu - 0.21 * s, cu + 0.07 * s, kit.shirt);
      fillSpan(frame, y, cu + 0.07 * s, cu + 0.21 * s, shirtDark);
    }
    if (r >= 0.82 && r < headC - headR * 0.6) fillSpan(frame, y, cu - 0.06 * s, cu + 0.06 * s, skin);
    const dr = (r - headC) / headR;
    if (dr > -1 && dr <= 1) {
      const half = Math.max(0.5, 0.1 * s * Math.sqrt(1 - dr * dr));
      fillSpan(frame, y, cu - half, cu + half, dr > 0.35 ? hair : skin);
    }
  }
}

function drawBall(frame: RgbFrame, f: BallFigure): void {
  fillDisc(frame, f.centreU, f.centreV, f.radiusPx, BALL_LIGHT);
  if (f.radiusPx >= 2.5)
    fillDisc(frame, f.centreU + f.radiusPx * 0.3, f.centreV + f.radiusPx * 0.3, f.radiusPx * 0.45, BALL_DARK);
}

/** Draws the figures (already in painter's order) and their shadows into the frame. */
export function drawFigures(frame: RgbFrame, figures: Figure[], look: Appearance): void {
  for (const f of figures) {
    if (f.kind === 'person') {
      darkenEllipse(frame, f.footU + 0.15 * f.pxPerM, f.footV, 0.45 * f.pxPerM, 0.14 * f.pxPerM, 0.62);
    } else {
      const lift = Math.min(1, f.ball.zM / 4);
      darkenEllipse(frame, f.shadowU, f.shadowV, f.radiusPx * (1.1 + lift), f.radiusPx * 0.45, 0.55 + 0.35 * lift);
    }
  }
  for (const f of figures) {
    if (f.kind === 'person') drawPerson(frame, f, look);
    else drawBall(frame, f);
  }
}
