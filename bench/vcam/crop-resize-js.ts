import type { BgrImage } from '../../core/src/workers/detect/letterbox.ts';
import type { CropWindow } from '../../core/src/workers/vcam/camera-path.ts';

/**
 * The virtual camera's former per-pixel JavaScript crop, kept as the
 * benchmark's baseline (bench/vcam/render.ts). Crops `window` (sub-pixel, source pixels) out of a packed BGR frame and
 * resizes it bilinearly (pixel centres aligned) to `outWidth × outHeight`
 * into `out` (packed BGR, reused between frames). Samples outside the frame
 * are clamped to its edge.
 */
export function cropResizeBgr(image: BgrImage, window: CropWindow, outWidth: number, outHeight: number, out: Buffer) {
  const x0 = window.cx - window.width / 2;
  const y0 = window.cy - window.height / 2;
  const sx = window.width / outWidth;
  const sy = window.height / outHeight;
  const maxX = image.width - 1;
  const maxY = image.height - 1;
  // Fixed-point weights (8 fractional bits): integer arithmetic only in the inner loop.
  const xa = new Int32Array(outWidth);
  const xb = new Int32Array(outWidth);
  const xw = new Int32Array(outWidth);
  for (let x = 0; x < outWidth; x++) {
    const fx = Math.min(Math.max(x0 + (x + 0.5) * sx - 0.5, 0), maxX);
    const i = Math.floor(fx);
    xa[x] = i * 3;
    xb[x] = Math.min(i + 1, maxX) * 3;
    xw[x] = Math.round((fx - i) * 256);
  }
  const src = image.data;
  const stride = image.width * 3;
  let o = 0;
  for (let y = 0; y < outHeight; y++) {
    const fy = Math.min(Math.max(y0 + (y + 0.5) * sy - 0.5, 0), maxY);
    const j = Math.floor(fy);
    const wy = Math.round((fy - j) * 256);
    const iy = 256 - wy;
    const ra = j * stride;
    const rb = Math.min(j + 1, maxY) * stride;
    for (let x = 0; x < outWidth; x++, o += 3) {
      const wx = xw[x]!;
      const ix = 256 - wx;
      const a = ra + xa[x]!;
      const b = ra + xb[x]!;
      const c = rb + xa[x]!;
      const d = rb + xb[x]!;
      out[o] = ((src[a]! * ix + src[b]! * wx) * iy + (src[c]! * ix + src[d]! * wx) * wy + 32768) >> 16;
      out[o + 1] =
        ((src[a + 1]! * ix + src[b + 1]! * wx) * iy + (src[c + 1]! * ix + src[d + 1]! * wx) * wy + 32768) >> 16;
      out[o + 2] =
        ((src[a + 2]! * ix + src[b + 2]! * wx) * iy + (src[c + 2]! * ix + src[d + 2]! * wx) * wy + 32768) >> 16;
    }
  }
  return out;
}
