import { z } from 'zod';

const finite = z.number().finite();
const window = z.object({ cx: finite, cy: finite, width: finite.positive(), height: finite.positive() });

/** Validates a `CameraPathCarry` read back from a `vcam-carry` artifact. */
export const cameraPathCarrySchema = z.object({
  camera: z.object({ cx: finite, cy: finite, width: finite.positive(), vx: finite, vy: finite }),
  recentTargets: z.array(window).max(10_000),
});
