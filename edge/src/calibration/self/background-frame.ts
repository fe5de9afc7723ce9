/**
 * The background of a static camera: the per-pixel, per-channel median of
 * frames taken seconds apart. Players, the ball and anything else that moves
 * cover a given pixel in few of the frames and vanish from the median, so
 * features found in it belong to the static scene (lines, stands, trees) and
 * can be matched between cameras whatever the play did.
 */

/**
 * Median of equally sized 8-bit frames (any channel layout), byte by byte.
 * @throws Error when `frames` is empty or the sizes differ.
 */
export function medianFrame(frames: readonly Uint8Array[]): Uint8Array {
  const first = frames[0];
  if (!first) throw new Error('medianFrame needs at least one frame');
  if (frames.some((f) => f.length !== first.length)) throw new Error('medianFrame: frames differ in size');
  const n = frames.length;
  if (n === 1) return Uint8Array.from(first);
  const out = new Uint8Array(first.length);
  const values = new Uint8Array(n);
  const mid = n >> 1;
  for (let i = 0; i < first.length; i++) {
    for (let k = 0; k < n; k++) {
      // insertion sort of n (≤ ~9) bytes
      const v = (frames[k] as Uint8Array)[i] as number;
      let j = k;
      while (j > 0 && (values[j - 1] as number) > v) {
        values[j] = values[j - 1] as number;
        j--;
      }
      values[j] = v;
    }
    out[i] = values[mid] as number;
  }
  return out;
}

/** ITU-R BT.601 luma of an RGB24 image. */
export function rgbToGray(rgb: Uint8Array): Uint8Array {
  const out = new Uint8Array(rgb.length / 3);
  for (let i = 0, j = 0; i < out.length; i++, j += 3) {
    out[i] = Math.round(0.299 * (rgb[j] as number) + 0.587 * (rgb[j + 1] as number) + 0.114 * (rgb[j + 2] as number));
  }
  return out;
}
