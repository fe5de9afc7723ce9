/**
 * Minimal drawing on packed RGB24 frames (3 bytes per pixel, rows top to
 * bottom, no padding): clipped horizontal spans, discs and darkened
 * ellipses. Everything the renderer draws is built from spans.
 */
import type { Rgb } from './appearance.ts';

export interface RgbFrame {
  widthPx: number;
  heightPx: number;
  /** `widthPx · heightPx · 3` bytes. */
  data: Uint8Array;
}

/**
 * Fills pixels [x0, x1) of row y with a colour (clipped to the frame). A
 * non-empty span narrower than a pixel still fills the pixel it starts in, so
 * that thin limbs of distant people do not vanish.
 */
export function fillSpan(frame: RgbFrame, y: number, x0: number, x1: number, c: Rgb): void {
  if (y < 0 || y >= frame.heightPx || !(x1 > x0)) return;
  let a = Math.round(x0);
  let b = Math.round(x1);
  if (b <= a) {
    a = Math.floor((x0 + x1) / 2);
    b = a + 1;
  }
  a = Math.max(0, a);
  b = Math.min(frame.widthPx, b);
  if (b <= a) return;
  const d = frame.data;
  let i = (y * frame.widthPx + a) * 3;
  for (let x = a; x < b; x++, i += 3) {
    d[i] = c[0];
    d[i + 1] = c[1];
    d[i + 2] = c[2];
  }
}

/** Multiplies pixels [x0, x1) of row y by `factor` (0–1). */
export function darkenSpan(frame: RgbFrame, y: number, x0: number, x1: number, factor: number): void {
  if (y < 0 || y >= frame.heightPx) return;
  const a = Math.max(0, Math.round(x0));
  const b = Math.min(frame.widthPx, Math.round(x1));
  const d = frame.data;
  let i = (y * frame.widthPx + a) * 3;
  for (let x = a; x < b; x++, i += 3) {
    d[i] = (d[i] as number) * factor;
    d[i + 1] = (d[i + 1] as number) * factor;
    d[i + 2] = (d[i + 2] as number) * factor;
  }
}

/** Darkens an axis-aligned ellipse centred at (cx, cy) with radii rx, ry (pixels). */
export function darkenEllipse(frame: RgbFrame, cx: number, cy: number, rx: number, ry: number, factor: number): void {
  if (rx <= 0 || ry <= 0) return;
  const y0 = Math.ceil(cy - ry);
  const y1 = Math.floor(cy + ry);
  for (let y = y0; y <= y1; y++) {
    const dy = (y - cy) / ry;
    const half = rx * Math.sqrt(Math.max(0, 1 - dy * dy));
    darkenSpan(frame, y, cx - half, cx + half, factor);
  }
}

/** Fills a disc centred at (cx, cy), radius r (pixels). */
export function fillDisc(frame: RgbFrame, cx: number, cy: number, r: number, c: Rgb): void {
  const y0 = Math.round(cy - r);
  const y1 = Math.round(cy + r);
  for (let y = y0; y <= y1; y++) {
    const dy = y - cy;
    const half = Math.sqrt(Math.max(0, r * r - dy * dy));
    fillSpan(frame, y, cx - half, cx + half + (half < 0.5 ? 1 : 0), c);
  }
}
