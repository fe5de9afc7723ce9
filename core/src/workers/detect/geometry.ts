/** An axis-aligned box `[x1, y1, x2, y2]` in pixels (x right, y down; x2 > x1, y2 > y1). */
export type BoxXyxy = [number, number, number, number];

/** A rectangle `{x, y, width, height}` in pixels. */
export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Area of a box in square pixels (0 for degenerate boxes). */
export function boxArea(box: BoxXyxy): number {
  return Math.max(0, box[2] - box[0]) * Math.max(0, box[3] - box[1]);
}

/** Area where two boxes overlap, square pixels (0 when they do not). */
function intersectionArea(a: BoxXyxy, b: BoxXyxy): number {
  const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  if (w <= 0) return 0;
  const h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  return h <= 0 ? 0 : w * h;
}

/**
 * Intersection over the smaller box's area, in [0, 1]: 1 when one box lies wholly inside the other
 * (whatever their IoU), 0 when they do not overlap.
 */
export function intersectionOverSmaller(a: BoxXyxy, b: BoxXyxy): number {
  const inter = intersectionArea(a, b);
  if (inter === 0) return 0;
  const smaller = Math.min(boxArea(a), boxArea(b));
  return smaller > 0 ? inter / smaller : 0;
}

/** Intersection over union of two boxes, in [0, 1]; 0 when both are empty. */
export function iou(a: BoxXyxy, b: BoxXyxy): number {
  const inter = intersectionArea(a, b);
  if (inter === 0) return 0;
  const union = boxArea(a) + boxArea(b) - inter;
  return union > 0 ? inter / union : 0;
}
