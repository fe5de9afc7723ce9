import { z } from 'zod';
import { safeId, sizeBytes } from './safe-id.ts';

/**
 * A relative object key on a storage element: 1–16 `safeId` segments joined
 * by `/` (`acme/m-42/panorama.mp4`); it can never be absolute or climb with `..`.
 */
export const objectKeySchema = z
  .string()
  .max(1024)
  .refine(
    (key) => {
      const segments = key.split('/');
      return segments.length >= 1 && segments.length <= 16 && segments.every((s) => safeId.safeParse(s).success);
    },
    { message: 'a relative key of 1 to 16 safe segments separated by "/"' },
  );

/** Where a file lives: which SE, under which key, its size and SHA-256. */
export const artifactRefSchema = z.object({
  /** What it is: `panorama`, `detections`, `tracks`, `vcam`, `hls`, `report`, … */
  kind: safeId,
  storage_id: safeId,
  object_key: objectKeySchema,
  size_bytes: sizeBytes,
  sha256: z.string().regex(/^[0-9a-f]{64}$/, { message: '64 lower-case hex digits' }),
  /** MIME type when known. */
  content_type: z.string().max(255).optional(),
});
export type ArtifactRef = z.infer<typeof artifactRefSchema>;
