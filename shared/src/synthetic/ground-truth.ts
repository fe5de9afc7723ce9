/**
 * Ground-truth rows of the synthetic match.
 *
 * MOTChallenge ground-truth format (Milan et al., "MOT16: A Benchmark for
 * Multi-Object Tracking", 2016, §3.3), one line per object and frame:
 * `frame,id,bb_left,bb_top,bb_width,bb_height,conf,class,visibility`
 * - `frame`: 1-based frame number;
 * - `id`: identity, stable over the clip (1–11 team A with 1 the goalkeeper,
 *   12–22 team B with 12 the goalkeeper, 23 referee, 24 ball; see identities.csv);
 * - `bb_*`: the box in pixels, left/top of the top-left corner, clipped to the image;
 * - `conf`: 1 (the object is to be considered);
 * - `class`: 1 player, 2 goalkeeper, 3 referee, 4 ball ({@link CLASS_IDS});
 * - `visibility`: 0–1, the fraction of the unclipped box that is inside the
 *   image and not covered by nearer objects' boxes (10 × 10 samples).
 */
import { CLASS_NAMES, clipBox, type Figure, visibilities } from './figures.ts';
import type { MatchState } from './simulation.ts';

export { CLASS_IDS, CLASS_NAMES } from './figures.ts';

const f2 = (v: number) => v.toFixed(2);

/** MOT lines (each ending in a newline) for the figures of one frame of one view. */
export function motRows(frameIndex: number, figures: Figure[], widthPx: number, heightPx: number): string {
  const vis = visibilities(figures, widthPx, heightPx);
  let out = '';
  figures.forEach((f, i) => {
    const b = clipBox(f.box, widthPx, heightPx);
    if (!b) return;
    out += `${frameIndex + 1},${f.id},${f2(b.left)},${f2(b.top)},${f2(b.right - b.left)},${f2(b.bottom - b.top)},1,${f.classId},${(vis[i] as number).toFixed(2)}\n`;
  });
  return out;
}

/** Header of positions.csv. */
export const POSITIONS_HEADER = 'frame,time_s,id,class,team,x_m,y_m,z_m\n';

/** positions.csv lines of one frame: every person (z = 0, ground contact) and the ball (z = its lowest point). */
export function positionRows(state: MatchState): string {
  const t = state.timeS.toFixed(3);
  const fr = state.frame + 1;
  let out = '';
  for (const p of state.people) {
    out += `${fr},${t},${p.id},${p.role},${p.team ?? ''},${p.xM.toFixed(3)},${p.yM.toFixed(3)},0.000\n`;
  }
  const b = state.ball;
  out += `${fr},${t},${b.id},ball,,${b.xM.toFixed(3)},${b.yM.toFixed(3)},${b.zM.toFixed(3)}\n`;
  return out;
}

/** identities.csv: one line per identity. */
export function identitiesCsv(state: MatchState): string {
  let out = 'id,class,class_id,team,height_m\n';
  for (const p of state.people)
    out += `${p.id},${p.role},${CLASS_NAMES.indexOf(p.role) + 1},${p.team ?? ''},${p.heightM.toFixed(3)}\n`;
  out += `${state.ball.id},ball,4,,0.220\n`;
  return out;
}

/** gt/README.md written next to the files: what each file holds. */
export const GROUND_TRUTH_README = `# Ground truth of a synthetic match

Pitch frame: metres, origin at the centre spot, x along the length (right goal at +52.5),
y across the pitch away from the cameras, z up. Cameras: see ../venue.json
(shared/src/contracts/venue-calibration.ts documents every field).

- positions.csv: \`frame,time_s,id,class,team,x_m,y_m,z_m\`; frame is 1-based; people stand at
  z = 0 (their ground contact point); the ball's z is the height of its lowest point.
- camera-<i>.mot.txt, panorama.mot.txt: MOTChallenge ground truth,
  \`frame,id,bb_left,bb_top,bb_width,bb_height,conf,class,visibility\`; 1-based frames; boxes in
  pixels clipped to the image; conf = 1; class 1 player, 2 goalkeeper, 3 referee, 4 ball;
  visibility 0–1 = fraction of the unclipped box inside the image and not behind nearer boxes.
  A person's box spans the top of the head to the feet and ±0.3 m around the projected
  vertical through the feet; the ball's box is its projected disc.
- identities.csv: \`id,class,class_id,team,height_m\` (ids 1–11 team A, 1 its goalkeeper;
  12–22 team B, 12 its goalkeeper; 23 referee; 24 ball).
`;
