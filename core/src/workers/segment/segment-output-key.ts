import type { StageTask } from '@polyvision/shared';

/** The folder name of segment `index` in object keys: `segment-000003` (6 digits: 1,000,000 segments). */
export function segmentFolder(index: number): string {
  return `segment-${String(index).padStart(6, '0')}`;
}

/** A model version as one safe key component (`[A-Za-z0-9._-]`, no leading dot). */
export function versionFolder(modelVersion: string): string {
  return modelVersion.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
}

/**
 * The object key of a stage output:
 * - whole-file job: `<org>/<match>/<stage>/<version>/<name…>`;
 * - segment of a match job: `<org>/<match>/<stage>/<version>/segment-000003/<name…>`,
 *   so segments never overwrite each other and a re-run of one segment rewrites only its own keys.
 *
 * Deterministic: the same task gives the same key on every attempt.
 */
export function segmentOutputKey(
  task: Pick<StageTask, 'organization_id' | 'match_id' | 'stage' | 'model_version' | 'segment'>,
  ...name: string[]
): string {
  const base = [task.organization_id, task.match_id, task.stage, versionFolder(task.model_version)];
  if (task.segment) base.push(segmentFolder(task.segment.index));
  return [...base, ...name].join('/');
}

/**
 * The object key of a match-level output of a segmented stage (the one the segments build up
 * together, e.g. the match's HLS playlists): `<org>/<match>/<stage>/<version>/match/<name…>`.
 * Rewritten by every segment, in order.
 */
export function matchOutputKey(
  task: Pick<StageTask, 'organization_id' | 'match_id' | 'stage' | 'model_version'>,
  ...name: string[]
): string {
  return [task.organization_id, task.match_id, task.stage, versionFolder(task.model_version), 'match', ...name].join(
    '/',
  );
}
