/**
 * Writes the remap maps and blend masks as the image files ffmpeg reads:
 * binary PGM (Netpbm `P5`): 16-bit big-endian samples (maxval 65535) for
 * `remap`'s xmap/ymap (ffmpeg decodes them as gray16be), 8-bit for the masks.
 * Each file is written to a temporary name, fsynced and renamed, so a crash
 * never leaves a half-written map behind.
 */
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { PixelBox, RemapMaps } from './remap-maps.ts';

/** The files of one camera; the maps and mask cover only the camera's box of the panorama. */
export interface CameraMapFiles {
  cameraId: string;
  /** Where the warped camera goes in the panorama. */
  box: PixelBox;
  xmapPath: string;
  ymapPath: string;
  maskPath: string;
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
 * Writes `<dir>/<camera>.xmap.pgm`, `.ymap.pgm` and `.mask.pgm` for every
 * camera, cropped to the camera's box of the panorama.
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
      maskPath: join(dir, `${cam.cameraId}.mask.pgm`),
    };
    const { width, height } = cam.box;
    await writeDurably(files.xmapPath, pgm16(width, height, cropSamples(cam.xmap, maps.widthPx, cam.box)));
    await writeDurably(files.ymapPath, pgm16(width, height, cropSamples(cam.ymap, maps.widthPx, cam.box)));
    await writeDurably(files.maskPath, pgm8(width, height, cropSamples(cam.mask, maps.widthPx, cam.box)));
    out.push(files);
  }
  return out;
}
