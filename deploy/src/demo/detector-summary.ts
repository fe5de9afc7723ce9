import { createReadStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ArtifactIo, JobView } from '@polyvision/core';
import type { ArtifactRef } from '@polyvision/shared';

/** What the demo tells about its detector run (from the detections file's header). */
export interface DetectorSummary {
  /**
   * The model version, with the precision and provider it ran at and whether the model card's verifiers
   * rescored its people and ball: `player-detector-3.4 (int8, cpu, verified)`.
   */
  model: string;
  /** `CxR (…)`: the tile grid and why it was chosen. */
  tiling: string | null;
  /** The stage's warnings (a model that looks wrong for the footage, a failed scale estimate). */
  warnings: string[];
}

/**
 * Reads the header line of the collected detections file (`detect/detections.jsonl`).
 * Null when there is none or its first line is not JSON.
 */
export async function detectorSummaryOf(outDir: string, detections: string | null): Promise<DetectorSummary | null> {
  if (!detections) return null;
  const lines = createInterface({ input: createReadStream(join(outDir, detections)), crlfDelay: Infinity });
  let first: string | undefined;
  for await (const line of lines) {
    first = line;
    break;
  }
  lines.close();
  let header: {
    model?: {
      version?: string;
      tiles?: number;
      precision?: string;
      executionProvider?: string;
      verifier?: unknown;
      ballVerifier?: unknown;
    };
    tiling?: { columns: number; rows: number; source: string; personHeightPx?: number; scale: number };
    warnings?: string[];
  };
  try {
    header = JSON.parse(first ?? '');
  } catch {
    return null;
  }
  const t = header.tiling;
  const ran = [
    header.model?.precision,
    header.model?.executionProvider,
    header.model?.verifier || header.model?.ballVerifier ? 'verified' : '',
  ]
    .filter(Boolean)
    .join(', ');
  return {
    model: `${header.model?.version ?? 'unknown'}${ran ? ` (${ran})` : ''}`,
    tiling: t
      ? `${t.columns}x${t.rows} tiles (${t.source}${t.personHeightPx !== undefined ? `, people ~${Math.round(t.personHeightPx)} px` : ''}, scale ${t.scale})`
      : null,
    warnings: Array.isArray(header.warnings) ? header.warnings.map(String) : [],
  };
}

/**
 * The detect stage's warnings of a job that failed later (e.g. at track): its
 * detections file fetched from storage into `workDir`. Empty when detect has no output.
 */
export async function detectWarningsOf(job: JobView, io: ArtifactIo, workDir: string): Promise<string[]> {
  const ref = job.stages
    .find((s) => s.stage === 'detect')
    ?.outputs.find((o) => (o as ArtifactRef).kind === 'detections') as ArtifactRef | undefined;
  if (!ref) return [];
  const dir = join(workDir, 'detect-warnings');
  await mkdir(dir, { recursive: true });
  const path = await io.openInput(ref, dir);
  return (await detectorSummaryOf(dirname(path), path.slice(dirname(path).length + 1)))?.warnings ?? [];
}
