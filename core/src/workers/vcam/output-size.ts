import { PolyvisionError } from '@polyvision/shared';

/** The virtual camera's output size, and what it costs in upscaling. */
export interface VcamSizing {
  outputWidth: number;
  outputHeight: number;
  /** `auto` (follows the source) or `configured` (VCAM_OUTPUT_WIDTH/HEIGHT). */
  sizeSource: 'auto' | 'configured';
  /** Narrowest crop width, source pixels: `outputWidth / maxUpscale`, at most the widest window that fits. */
  minCropWidthPx: number;
  /** The largest upscale allowed (VCAM_MAX_UPSCALE). */
  maxUpscale: number;
  /** The largest upscale the narrowest crop can give: > maxUpscale only when a configured size forces it. */
  worstUpscale: number;
  /** Set when the configured size forces more upscaling than `maxUpscale` allows (said in camera-path.json and the report). */
  warning: string | null;
}

const even = (v: number) => Math.max(2, 2 * Math.floor(v / 2));

/**
 * Chooses the output size and the narrowest crop:
 * - **auto** (no size configured): the height of the tallest `aspectRatio`
 *   window that fits the source, at most 1080, even; the width follows the
 *   aspect. A 2880×392 panorama gives 696×392, never 1080p;
 * - **configured**: as given; when even the widest window would be upscaled
 *   more than `maxUpscale`, the size is kept and `warning` says so.
 * The narrowest crop is `outputWidth / maxUpscale` source pixels wide, so no
 * crop is ever upscaled more than `maxUpscale` (unless the warning says otherwise).
 *
 * @throws PolyvisionError `vcam_options_invalid` for a size that is odd or a maxUpscale < 1.
 */
export function chooseVcamSizing(params: {
  sourceWidth: number;
  sourceHeight: number;
  outputWidth?: number;
  outputHeight?: number;
  /** @defaultValue 1.5 */
  maxUpscale?: number;
  /** @defaultValue 16/9 */
  aspectRatio?: number;
}): VcamSizing {
  const maxUpscale = params.maxUpscale ?? 1.5;
  const aspect = params.aspectRatio ?? 16 / 9;
  if (!(maxUpscale >= 1))
    throw new PolyvisionError('vcam_options_invalid', `VCAM_MAX_UPSCALE must be ≥ 1, got ${maxUpscale}`);
  const widest = Math.min(params.sourceWidth, params.sourceHeight * aspect);
  let outputWidth: number;
  let outputHeight: number;
  let sizeSource: VcamSizing['sizeSource'];
  if (params.outputWidth && params.outputHeight) {
    outputWidth = params.outputWidth;
    outputHeight = params.outputHeight;
    sizeSource = 'configured';
    if (outputWidth % 2 !== 0 || outputHeight % 2 !== 0) {
      throw new PolyvisionError('vcam_options_invalid', `output size must be even, got ${outputWidth}×${outputHeight}`);
    }
  } else {
    outputHeight = even(Math.min(1080, widest / aspect));
    outputWidth = even(outputHeight * aspect);
    sizeSource = 'auto';
  }
  const minCropWidthPx = Math.min(widest, outputWidth / maxUpscale);
  const worstUpscale = outputWidth / minCropWidthPx;
  const warning =
    worstUpscale > maxUpscale + 1e-9
      ? `the configured ${outputWidth}×${outputHeight} output upscales the ${params.sourceWidth}×${params.sourceHeight} source up to ${worstUpscale.toFixed(2)}× (limit ${maxUpscale}×): the picture is softer than its size suggests`
      : null;
  return { outputWidth, outputHeight, sizeSource, minCropWidthPx, maxUpscale, worstUpscale, warning };
}
