import { z } from 'zod';

const finite = z.number().finite();
const window = z.object({ cx: finite, cy: finite, width: finite.positive(), height: finite.positive() });

/**
 * Validates the vcam stage's carry (`vcam-carry`): the path's `CameraPathCarry` and, when the pitch
 * was found as the grass area of the first segment's frames, its outline (panorama px), so later
 * segments keep the same pitch without decoding frames for it.
 */
export const cameraPathCarrySchema = z.object({
  camera: z.object({ cx: finite, cy: finite, width: finite.positive(), vx: finite, vy: finite }),
  recentTargets: z.array(window).max(10_000),
  grassOutline: z
    .array(z.tuple([finite, finite]))
    .max(100_000)
    .nullable()
    .optional(),
});
export type VcamCarry = z.output<typeof cameraPathCarrySchema>;

/**
 * The carry for a segment that follows segments left out of the match (`task.segment.gap_s` > 0):
 * the camera stays where it was, at rest (its speed and the targets it was smoothing over belong to
 * play that is no longer on screen), and the pitch found on the first segment is kept.
 *
 * @returns `carry` itself when there is no gap.
 */
export function vcamCarryAcrossGap(carry: VcamCarry, gapS: number): VcamCarry {
  if (!(gapS > 0)) return carry;
  return { ...carry, camera: { ...carry.camera, vx: 0, vy: 0 }, recentTargets: [] };
}
