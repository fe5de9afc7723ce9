import { join } from 'node:path';

/**
 * Where `cache-detections.ts` keeps a synthetic clip's source-rate detections (`tiles`: `auto` or a count);
 * `-stage`: made by the detector as the stage opens it (older files without it: a generic 72 px scale, no card).
 */
export const detectionsCachePath = (clipDir: string, tiles: string) =>
  join(clipDir, `detections-source-${tiles}-stage.jsonl`);
