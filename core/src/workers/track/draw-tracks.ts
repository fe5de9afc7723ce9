import { PNG } from 'pngjs';
import type { BgrImage } from '../detect/letterbox.ts';
import type { Track } from './tracks-format.ts';

/** A distinct, stable colour per track id (golden-angle hues), as RGB. */
export function trackColour(id: number): [number, number, number] {
  const hue = (id * 137.508) % 360;
  const c = 0.9;
  const x = c * (1 - Math.abs(((hue / 60) % 2) - 1));
  const [r, g, b] =
    hue < 60
      ? [c, x, 0]
      : hue < 120
        ? [x, c, 0]
        : hue < 180
          ? [0, c, x]
          : hue < 240
            ? [0, x, c]
            : hue < 300
              ? [x, 0, c]
              : [c, 0, x];
  return [Math.round((r + 0.1) * 255), Math.round((g + 0.1) * 255), Math.round((b + 0.1) * 255)];
}

/**
 * Draws tracks onto a frame and encodes it as PNG (pngjs): each track's box
 * at `frame` (2 px outline in its colour) and its trail, the foot points
 * (bottom centre) of its earlier frames.
 *
 * @param image - the frame, packed BGR.
 * @param frame - which analysed frame `image` is.
 */
export function drawTracksPng(image: BgrImage, tracks: readonly Track[], frame: number): Buffer {
  const png = new PNG({ width: image.width, height: image.height });
  for (let i = 0, j = 0; i < image.data.length; i += 3, j += 4) {
    png.data[j] = image.data[i + 2]!;
    png.data[j + 1] = image.data[i + 1]!;
    png.data[j + 2] = image.data[i]!;
    png.data[j + 3] = 255;
  }
  const put = (x: number, y: number, [r, g, b]: [number, number, number]) => {
    const xi = Math.round(x);
    const yi = Math.round(y);
    if (xi < 0 || yi < 0 || xi >= image.width || yi >= image.height) return;
    const o = (yi * image.width + xi) * 4;
    png.data[o] = r;
    png.data[o + 1] = g;
    png.data[o + 2] = b;
  };
  for (const track of tracks) {
    const colour = trackColour(track.id);
    for (const f of track.frames) {
      if (f.frame > frame) break;
      const fx = (f.box[0] + f.box[2]) / 2;
      const fy = f.box[3];
      for (let d = -1; d <= 1; d++) {
        put(fx + d, fy, colour);
        put(fx, fy + d, colour);
      }
    }
    const now = track.frames.find((f) => f.frame === frame);
    if (!now) continue;
    const [x1, y1, x2, y2] = now.box;
    for (let t = 0; t < 2; t++) {
      for (let x = x1; x <= x2; x++) {
        put(x, y1 + t, colour);
        put(x, y2 - t, colour);
      }
      for (let y = y1; y <= y2; y++) {
        put(x1 + t, y, colour);
        put(x2 - t, y, colour);
      }
    }
  }
  return PNG.sync.write(png);
}
