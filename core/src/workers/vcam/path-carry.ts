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
