import { PolyvisionError } from '@polyvision/shared';

/**
 * Output layouts of the common YOLO exports:
 * - `yolov8`: Ultralytics YOLOv8/YOLO11, `[1, 4+C, N]`: rows cx, cy, w, h (input pixels), then C class scores.
 * - `yolox`: Megvii YOLOX, `[1, N, 5+C]`: cx, cy, w, h raw (grid-decoded here), objectness, C class scores.
 */
export type ModelLayout = 'yolov8' | 'yolox';

/** The strides of the YOLO detection heads (P3, P4, P5). */
export const YOLO_STRIDES = [8, 16, 32] as const;

/** Anchor points of a `width × height` input over `strides` (e.g. 8400 for 640², 3549 for 416²). */
export function gridAnchorCount(width: number, height: number, strides: readonly number[] = YOLO_STRIDES): number {
  return strides.reduce((sum, s) => sum + Math.floor(width / s) * Math.floor(height / s), 0);
}

/** A layout matched to a concrete output shape. */
export interface ResolvedLayout {
  layout: ModelLayout;
  /** Anchor points (N). */
  anchorCount: number;
  /** Classes (C). */
  classCount: number;
}

/**
 * Matches an output shape to a layout: `[1, 4+C, N]` with N > 4+C for
 * YOLOv8/11 (boxes come decoded, so any head layout works, e.g. a
 * single-scale stride-8 head), and `[1, N, 5+C]` for YOLOX, where N must be
 * the anchor count of the input size over strides 8, 16, 32 (the grid is
 * decoded here). `'auto'` accepts whichever matches.
 *
 * @throws PolyvisionError `model_layout_unsupported` (not retriable) when the
 *   shape matches no known layout (or not the configured one).
 */
export function resolveLayout(
  outputDims: readonly number[],
  configured: ModelLayout | 'auto',
  inputWidth: number,
  inputHeight: number,
): ResolvedLayout {
  const anchors = gridAnchorCount(inputWidth, inputHeight);
  const [batch, a, b] = outputDims;
  const fail = (why: string): never => {
    throw new PolyvisionError(
      'model_layout_unsupported',
      `model output shape [${outputDims.join(', ')}] ${why}; supported: YOLOv8/11 [1, 4+C, N] with N > 4+C, and YOLOX [1, ${anchors}, 5+C] for a ${inputWidth}×${inputHeight} input`,
      { details: { outputDims: [...outputDims], configured } },
    );
  };
  if (outputDims.length !== 3 || a === undefined || b === undefined || batch === undefined || batch < 1) {
    return fail('is not three-dimensional');
  }
  const v8 = a >= 5 && b > a;
  const yx = a === anchors && b >= 6;
  if ((configured === 'yolov8' || configured === 'auto') && v8) {
    return { layout: 'yolov8', anchorCount: b, classCount: a - 4 };
  }
  if ((configured === 'yolox' || configured === 'auto') && yx) {
    return { layout: 'yolox', anchorCount: a, classCount: b - 5 };
  }
  return fail(configured === 'auto' ? 'matches no known layout' : `does not match the configured layout ${configured}`);
}
