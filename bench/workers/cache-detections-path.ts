import { join } from 'node:path';

/** Where `cache-detections.ts` keeps a synthetic clip's source-rate detections (`tiles`: `auto` or a count). */
export const detectionsCachePath = (clipDir: string, tiles: string) =>
  join(clipDir, `detections-source-${tiles}.jsonl`);
