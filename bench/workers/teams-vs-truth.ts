/**
 * Who the analyze stage's teams are made of, against the synthetic ground truth: for a demo output
 * (`out/<match>`: `track/tracks.json`, `analyze/match/summary.json`) and its sample
 * (`gt/panorama.mot.txt`, `gt/identities.csv`), each tracked box is matched to the ground-truth person
 * it overlaps most (IoU ≥ 0.3) and counted under its track's team (A, B, other), per analysed frame.
 * A right split: each team its own ten outfield players, the goalkeepers and the referee in `other`.
 *
 *   node bench/workers/teams-vs-truth.ts out/<match> .cache/demo/synthetic-1280x720-20s-25fps-seed7
 *
 * Prints the summary's players per frame and, per team, truth role-team → boxes per analysed frame.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { iou } from '../../core/src/workers/detect/index.ts';
import { readTracksFile } from '../../core/src/workers/track/index.ts';

const [matchDir, sampleDir] = process.argv.slice(2);
if (!matchDir || !sampleDir) {
  process.stderr.write('usage: node bench/workers/teams-vs-truth.ts out/<match> <sample dir with gt/>\n');
  process.exit(2);
}
const who = new Map<number, string>();
for (const line of (await readFile(join(sampleDir, 'gt', 'identities.csv'), 'utf8')).split('\n').slice(1)) {
  const [id, role, , team] = line.split(',');
  if (id) who.set(Number(id), team ? `${role} ${team}` : role!);
}
const truth = new Map<number, { id: number; box: [number, number, number, number] }[]>();
for (const line of (await readFile(join(sampleDir, 'gt', 'panorama.mot.txt'), 'utf8')).split('\n')) {
  const [frame, id, x, y, w, h] = line.split(',').map(Number);
  if (!frame || !id) continue;
  const list = truth.get(frame) ?? [];
  list.push({ id, box: [x!, y!, x! + w!, y! + h!] });
  truth.set(frame, list);
}
const summary = JSON.parse(await readFile(join(matchDir, 'analyze', 'match', 'summary.json'), 'utf8'));
const teamOf = new Map<number, string>();
for (const team of ['A', 'B'] as const) for (const id of summary.teams[team].players) teamOf.set(id, team);
const tracks = await readTracksFile(join(matchDir, 'track', 'tracks.json'));
const fps = tracks.detections.source.fps;
const frames = new Set<number>();
const counts = new Map<string, Map<string, number>>();
for (const track of tracks.tracks) {
  if (track.class === 'ball') continue;
  const team = teamOf.get(track.id) ?? 'other';
  for (const f of track.frames) {
    const frame = Math.round((f.tMs * fps) / 1000) + 1;
    frames.add(frame);
    let best = { id: 0, overlap: 0.3 };
    for (const t of truth.get(frame) ?? []) {
      const overlap = iou(t.box, f.box);
      if (overlap >= best.overlap) best = { id: t.id, overlap };
    }
    const label = best.id ? (who.get(best.id) ?? `id ${best.id}`) : 'no one';
    const byLabel = counts.get(team) ?? new Map<string, number>();
    byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
    counts.set(team, byLabel);
  }
}
process.stdout.write(
  `summary: A ${summary.teams.A.playersPerFrame} v B ${summary.teams.B.playersPerFrame} players per frame, balanced ${summary.teams.balanced}\n`,
);
for (const team of ['A', 'B', 'other']) {
  const byLabel = [...(counts.get(team) ?? new Map<string, number>())].sort((a, b) => b[1] - a[1]);
  const text = byLabel.map(([label, n]) => `${label} ${(n / frames.size).toFixed(2)}`).join(', ');
  process.stdout.write(`${team}: ${text} (boxes per analysed frame, ${frames.size} frames)\n`);
}
