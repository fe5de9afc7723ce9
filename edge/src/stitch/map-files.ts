/**
 * Writes the remap maps and blend masks as the image files ffmpeg reads:
 * binary PGM (Netpbm `P5`): 16-bit big-endian samples (maxval 65535) for
 * `remap`'s xmap/ymap (ffmpeg decodes them as gray16be), 8-bit for the masks.
 * Each file is written to a temporary name, fsynced and renamed, so a crash
 * never leaves a half-written map behind.
 */
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { RemapMaps } from './remap-maps.ts';

/** The files of one camera. */
export interface CameraMapFiles {
  cameraId: string;
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
 * Writes `<dir>/<camera>.xmap.pgm`, `.ymap.pgm` and `.mask.pgm` for every camera.
 * @throws the file system's error (ENOSPC, EACCES) as is.
 */
export async function writeMapFiles(maps: RemapMaps, dir: string): Promise<CameraMapFiles[]> {
  const out: CameraMapFiles[] = [];
  for (const cam of maps.cameras) {
    const files: CameraMapFiles = {
      cameraId: cam.cameraId,
      xmapPath: join(dir, `${cam.cameraId}.xmap.pgm`),
      ymapPath: join(dir, `${cam.cameraId}.ymap.pgm`),
      maskPath: join(dir, `${cam.cameraId}.mask.pgm`),
    };
    await writeDurably(files.xmapPath, pgm16(maps.widthPx, maps.heightPx, cam.xmap));
    await writeDurably(files.ymapPath, pgm16(maps.widthPx, maps.heightPx, cam.ymap));
    await writeDurably(files.maskPath, pgm8(maps.widthPx, maps.heightPx, cam.mask));
    out.push(files);
  }
  return out;
}
