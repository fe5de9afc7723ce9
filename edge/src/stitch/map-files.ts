/**
 * Writes the remap maps and blend masks as the image files ffmpeg reads:
 * binary PGM (Netpbm `P5`): 16-bit big-endian samples (maxval 65535) for
 * `remap`'s xmap/ymap (ffmpeg decodes them as gray16be), 8-bit for the masks.
 * Each file is written to a temporary name, fsynced and renamed, so a crash
 * never leaves a half-written map behind.
 */
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { type PixelBox, type RemapMaps, UNMAPPED } from './remap-maps.ts';

/** The files of one camera; the maps and mask cover only the camera's box of the panorama. */
export interface CameraMapFiles {
  cameraId: string;
  /** Where the warped camera goes in the panorama. */
  box: PixelBox;
  xmapPath: string;
  ymapPath: string;
  /** Half-size maps for the 4:2:0 chroma planes (`box.width/2 × box.height/2`, chroma sample → chroma sample). */
  xmapChromaPath: string;
  ymapChromaPath: string;
  maskPath: string;
}

/**
 * The chroma maps of a 4:2:0 warp: each chroma sample covers a 2×2 block of
 * luma; its source is the mean of the block's mapped luma sources, in chroma
 * samples (UNMAPPED when none of the four is mapped).
 * @param xmap - luma map cropped to the box, `width × height` (even).
 */
export function chromaMaps(
  xmap: Uint16Array,
  ymap: Uint16Array,
  width: number,
  height: number,
): { xmap: Uint16Array; ymap: Uint16Array } {
  const cw = width >> 1;
  const ch = height >> 1;
  const cx = new Uint16Array(cw * ch).fill(UNMAPPED);
  const cy = new Uint16Array(cw * ch).fill(UNMAPPED);
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      let sx = 0;
      let sy = 0;
      let n = 0;
      for (const k of [
        2 * y * width + 2 * x,
        2 * y * width + 2 * x + 1,
        (2 * y + 1) * width + 2 * x,
        (2 * y + 1) * width + 2 * x + 1,
      ]) {
        const u = xmap[k] as number;
        if (u === UNMAPPED) continue;
        sx += u;
        sy += ymap[k] as number;
        n++;
      }
      if (n === 0) continue;
      // MPEG-2 4:2:0 siting: chroma sample (i, j) sits at luma (2i, 2j + 0.5); flooring keeps the last
      // luma column/row on the last chroma sample.
      cx[y * cw + x] = Math.floor(sx / n / 2 + 0.25);
      cy[y * cw + x] = Math.max(0, Math.floor((sy / n - 0.5) / 2 + 0.5));
    }
  }
  return { xmap: cx, ymap: cy };
}

/** Encodes 16-bit samples as a binary PGM (maxval 65535, big-endian). */
export function pgm16(widthPx: number, heightPx: number, samples: Uint16Array): Buffer {
  const header = Buffer.from(`P5\n${widthPx} ${heightPx}\n65535\n`, 'ascii');
  const body = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) body.writeUInt16BE(samples[i] as number, i * 2);
  return Buffer.concat([header, body]);
}

/** The `box` part of a row-major `widthPx`-wide image. */
export function cropSamples<T extends Uint8Array | Uint16Array>(samples: T, widthPx: number, box: PixelBox): T {
  const out = new (samples.constructor as new (n: number) => T)(box.width * box.height);
  for (let row = 0; row < box.height; row++) {
    const start = (box.y + row) * widthPx + box.x;
    out.set(samples.subarray(start, start + box.width), row * box.width);
  }
  return out;
}

/** Encodes 8-bit samples as a binary PGM (maxval 255). */
export function pgm8(widthPx: number, heightPx: number, samples: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`P5\n${widthPx} ${heightPx}\n255\n`, 'ascii'), samples]);
}

async function writeDurably(path: string, data: Buffer): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
}

/**
 * Writes `<dir>/<camera>.xmap.pgm`, `.ymap.pgm`, the half-size
 * `.xmap-chroma.pgm`/`.ymap-chroma.pgm` and `.mask.pgm` for every camera,
 * cropped to the camera's box of the panorama.
 * @throws the file system's error (ENOSPC, EACCES) as is.
 */
export async function writeMapFiles(maps: RemapMaps, dir: string): Promise<CameraMapFiles[]> {
  const out: CameraMapFiles[] = [];
  for (const cam of maps.cameras) {
    const files: CameraMapFiles = {
      cameraId: cam.cameraId,
      box: cam.box,
      xmapPath: join(dir, `${cam.cameraId}.xmap.pgm`),
      ymapPath: join(dir, `${cam.cameraId}.ymap.pgm`),
      xmapChromaPath: join(dir, `${cam.cameraId}.xmap-chroma.pgm`),
      ymapChromaPath: join(dir, `${cam.cameraId}.ymap-chroma.pgm`),
      maskPath: join(dir, `${cam.cameraId}.mask.pgm`),
    };
    const { width, height } = cam.box;
    const xmap = cropSamples(cam.xmap, maps.widthPx, cam.box);
    const ymap = cropSamples(cam.ymap, maps.widthPx, cam.box);
    await writeDurably(files.xmapPath, pgm16(width, height, xmap));
    await writeDurably(files.ymapPath, pgm16(width, height, ymap));
    const chroma = chromaMaps(xmap, ymap, width, height);
    await writeDurably(files.xmapChromaPath, pgm16(width >> 1, height >> 1, chroma.xmap));
    await writeDurably(files.ymapChromaPath, pgm16(width >> 1, height >> 1, chroma.ymap));
    await writeDurably(files.maskPath, pgm8(width, height, cropSamples(cam.mask, maps.widthPx, cam.box)));
    out.push(files);
  }
  return out;
}
