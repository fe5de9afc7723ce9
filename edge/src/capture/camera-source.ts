/**
 * Camera sources and the ffmpeg input arguments for each:
 * - `rtsp`: an IP camera (`rtsp://…`), over TCP, with a socket timeout so a
 *   camera that never answers makes ffmpeg exit (and the recorder retry);
 * - `file`: a video file played at its native rate (`-re`), looped or once;
 * - `synthetic`: a clip folder made by `polyvision synth-match`; the camera
 *   plays `<clip_dir>/<camera id>.mp4` in a loop at its native rate.
 */
import { join } from 'node:path';
import { z } from 'zod';

export const cameraSourceSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('rtsp'),
    url: z.string().regex(/^rtsps?:\/\/\S+$/, 'expected an rtsp:// or rtsps:// URL'),
    /** Socket timeout before ffmpeg gives up on a silent camera, ms. */
    timeout_ms: z.number().int().min(100).max(600_000).default(10_000),
  }),
  z.object({
    kind: z.literal('file'),
    path: z.string().min(1),
    loop: z.boolean().default(false),
  }),
  z.object({
    kind: z.literal('synthetic'),
    clip_dir: z.string().min(1),
  }),
]);
export type CameraSource = z.infer<typeof cameraSourceSchema>;

/** A human-readable name of a source, for logs and alarms (no credentials). */
export function describeSource(source: CameraSource): string {
  switch (source.kind) {
    case 'rtsp': {
      try {
        const url = new URL(source.url);
        url.username = '';
        url.password = '';
        return url.toString();
      } catch {
        return 'rtsp (unparsable URL)';
      }
    }
    case 'file':
      return `file ${source.path}${source.loop ? ' (looped)' : ''}`;
    case 'synthetic':
      return `synthetic ${source.clip_dir}`;
  }
}

/** The ffmpeg input arguments (up to and including `-i …`) of a camera's source. */
export function sourceInputArgs(cameraId: string, source: CameraSource): string[] {
  switch (source.kind) {
    case 'rtsp':
      return ['-rtsp_transport', 'tcp', '-timeout', String(source.timeout_ms * 1000), '-i', source.url];
    case 'file':
      return ['-re', ...(source.loop ? ['-stream_loop', '-1'] : []), '-i', source.path];
    case 'synthetic':
      return ['-re', '-stream_loop', '-1', '-i', join(source.clip_dir, `${cameraId}.mp4`)];
  }
}
