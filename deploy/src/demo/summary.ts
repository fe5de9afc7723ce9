import { relative } from 'node:path';
import { type DemoResult, formatBytes } from './run-demo.ts';

/** The 507s met during placement: which SE refused, and where the file went instead. */
export function insufficientStorageEvents(
  result: DemoResult,
): Array<{ storageId: string; resolvedOn: string | null; replica: string; message: string }> {
  const events = [];
  for (const p of result.placements) {
    const placedOn = p.attempts.find((a) => a.outcome === 'reserved')?.storage_id ?? null;
    for (const a of p.attempts.filter((x) => x.outcome === 'insufficient_storage')) {
      events.push({ storageId: a.storage_id, resolvedOn: placedOn, replica: p.replica, message: a.message ?? '' });
    }
  }
  return events;
}

/** The end-of-run summary printed by `pnpm demo`. */
export function formatSummary(result: DemoResult, cwd: string): string {
  const lines: string[] = [];
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  lines.push('', `Polyvision demo — match ${result.matchId} — ${result.job.status} in ${s(result.totalMs)}`);
  if (result.failure) lines.push(`FAILED: ${result.failure.reason}`);
  const jobError = result.job.error as { code?: string; message?: string } | null | undefined;
  if (!result.failure && jobError?.code === 'segments_failed') lines.push(`WARNING: ${jobError.message}`);
  // The report's errors beyond a failure (e.g. a completed job that tracked nobody): said here too.
  for (const c of result.checks ?? [])
    if (c.level === 'error' && c.id !== 'job-failed') lines.push(`CHECK: ${c.message}`);
  lines.push(
    `services: bus ${result.services.bus}, database ${result.services.database}, redis ${result.services.redis}`,
  );
  lines.push(matchLine(result));
  lines.push('', 'Placement');
  if (result.panoramaPlacement) {
    const p = result.panoramaPlacement;
    lines.push(`  panorama segment 0 (${formatBytes(p.sizeBytes)}) → ${p.storageId} in ${p.location}`);
  }
  const refused = insufficientStorageEvents(result);
  if (refused.length === 0) lines.push('  no 507 met');
  for (const e of refused) {
    lines.push(
      `  507 from ${e.storageId} (reservation refused on ${e.replica}; the cache still showed room) → excluded, cache updated, placed on ${e.resolvedOn ?? 'nothing'}`,
    );
  }
  const edge507 = result.upload.insufficientStorageResponses;
  lines.push(
    `  the edge's uploader (spool ${result.upload.state}) ${edge507 > 0 ? `got ${edge507} final 507(s) and waited Retry-After` : 'never saw a 507: ingest resolved it inside one request'}`,
  );
  const perSe = new Map<string, number>();
  for (const o of result.stored) perSe.set(o.storageId, (perSe.get(o.storageId) ?? 0) + 1);
  lines.push(
    `  ${result.stored.length} stage outputs placed by the worker: ${
      [...perSe]
        .sort()
        .map(([id, n]) => `${id} ${n}`)
        .join(', ') || 'none'
    }`,
  );
  lines.push('', 'Analytics');
  const pitch = result.panorama.pitchRegistration;
  if (result.analyticsUnit === 'm') {
    lines.push(
      `  in pitch metres: the venue calibration (venue.json) travelled with the match, uploaded before the panorama${result.calibration.placedOn ? ` to ${result.calibration.placedOn}` : ''}`,
      ...(pitch
        ? [
            `  the pitch registered from ${pitch.points} pitch points (--pitch-points): RMS ${pitch.rmsErrorM.toFixed(2)} m, worst ${pitch.maxErrorM.toFixed(2)} m${pitch.parts > 1 ? `, one homography per camera's part of the panorama` : ''}`,
          ]
        : []),
    );
  } else if (result.analyticsUnit === 'px') {
    lines.push(
      result.panorama.selfCalibration
        ? '  in image pixels: the rig was self-calibrated from its footage, which stitches it but does not register the pitch in metres (--pitch-points does)'
        : '  in image pixels: no venue calibration for this match (a one-camera rig without --calibration venue.json)',
    );
  } else {
    lines.push('  none');
  }
  lines.push('', 'Stage timings (wall)');
  for (const t of result.timings)
    lines.push(`  ${t.step.padEnd(8)} ${s(t.durationMs).padStart(8)}   (${s(t.startMs)} → ${s(t.endMs)})`);
  if (result.analysisFps !== null) {
    lines.push(
      `  the detector analyses ${result.analysisFps} frames per second of video (--analysis-fps); tracks are interpolated between`,
    );
  }
  if (result.detector) {
    lines.push(`  detector ${result.detector.model}${result.detector.tiling ? `: ${result.detector.tiling}` : ''}`);
    for (const w of result.detector.warnings) lines.push(`  WARNING (detect): ${w}`);
  }
  lines.push(
    `  the virtual camera renders ${result.vcamSize ?? 'nothing'} (its size follows the panorama unless --vcam-size says otherwise); HLS renditions never upscale it`,
  );
  lines.push('', 'Leaders');
  lines.push(`  capacity monitor: ${result.leaders.capacityMonitor ?? 'none'}`);
  for (const [id, partitions] of Object.entries(result.leaders.orchestratorPartitions)) {
    lines.push(`  ${id}: command partitions ${partitions.join(',') || '-'}`);
  }
  lines.push(`  workers: ${result.leaders.workers.join(', ')}`);
  lines.push('', `Outputs in ${relative(cwd, result.outDir) || '.'}/ (${result.outputs.files.length} files)`);
  lines.push(`  open ${relative(cwd, `${result.outDir}/report.html`)}   (machine-readable: demo.json)`);
  lines.push('');
  return lines.join('\n');
}

/**
 * `the match as one job: N segments of S s …`: segments the edge uploaded, what the job
 * received and processed per stage, and how it ended (from the job's match progress).
 */
export function matchLine(result: DemoResult): string {
  const m = result.job.match;
  const uploaded = `${result.segments.length} segments of ${result.segmentS} s uploaded by the edge`;
  if (!m) return `the match as one job: ${uploaded}; job ${result.job.job_id} is a ${result.job.kind} job`;
  const processed = Object.entries(m.processed)
    .map(([stage, n]) => `${stage} ${n}`)
    .join(', ');
  return `the match as one job (${result.job.job_id}): ${uploaded}; ${m.segments_received} received (${m.received_s} s), processed per stage: ${processed}; ${m.live ? 'still live' : `ended by ${m.ended_by}`}${m.gaps.length > 0 ? `; gaps ${m.gaps.join(', ')}` : ''}`;
}
