import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type DemoResult, formatBytes } from './run-demo.ts';
import { insufficientStorageEvents } from './summary.ts';

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/**
 * Writes `report.html` into the match folder: one self-contained page (inline
 * CSS, no script, relative links only) that opens from disk and shows the
 * panorama, the virtual-camera video, the HLS renditions, detections and tracks
 * (counts and links), analytics, heatmaps, placement, 507s, stage timings and leaders.
 *
 * @returns the report's path.
 */
export async function writeReport(result: DemoResult): Promise<string> {
  const o = result.outputs;
  const link = (path: string | null, label?: string) =>
    path ? `<a href="${escapeHtml(path)}">${escapeHtml(label ?? path)}</a>` : '<em>missing</em>';
  // detections.jsonl: a header line, then one line per analysed frame.
  const detections = o.detections
    ? (await readFile(join(result.outDir, o.detections), 'utf8')).split('\n').filter((l) => l.startsWith('{"frame"'))
        .length
    : 0;
  const tracksJson = o.tracks ? JSON.parse(await readFile(join(result.outDir, o.tracks), 'utf8')) : null;
  const trackCount = Array.isArray(tracksJson?.tracks)
    ? tracksJson.tracks.length
    : Array.isArray(tracksJson)
      ? tracksJson.length
      : 0;
  const analytics = o.analytics ? await readFile(join(result.outDir, o.analytics), 'utf8') : '';
  const refused = insufficientStorageEvents(result);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Polyvision — ${escapeHtml(result.matchId)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1b1f24}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
video,img{max-width:100%;background:#000}table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:left}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:.8rem}pre{background:#f6f8fa;padding:.8rem;overflow:auto;max-height:24rem}
</style></head><body>
<h1>Polyvision demo — match ${escapeHtml(result.matchId)}</h1>
<p>Job <code>${escapeHtml(result.job.job_id)}</code>: <strong>${escapeHtml(result.job.status)}</strong> in ${s(result.totalMs)} ·
bus ${escapeHtml(result.services.bus)}, database ${escapeHtml(result.services.database)}, redis ${escapeHtml(result.services.redis)}</p>

<h2 id="vcam">Virtual camera</h2>
${o.vcam ? `<video controls src="${escapeHtml(o.vcam)}" width="960"></video><p>${link(o.vcam)} · camera path ${link(o.cameraPath)}</p>` : '<p><em>missing</em></p>'}

<h2 id="panorama">Panorama (${result.panorama.stitched ? 'stitched on the edge' : 'one-camera rig: the camera video itself'})</h2>
<video controls src="${escapeHtml(o.panorama)}" width="1040"></video><p>${link(o.panorama)}</p>

<h2 id="hls">HLS renditions</h2>
<p>Master playlist ${link(o.hlsMaster)} (play it with any HLS player, e.g. <code>ffplay ${escapeHtml(o.hlsMaster ?? '')}</code>).</p>
<ul>${o.hlsPlaylists.map((p) => `<li>${link(p)}</li>`).join('')}</ul>
${o.poster ? `<img src="${escapeHtml(o.poster)}" alt="poster" width="480">` : ''}

<h2 id="detections">Detections and tracks</h2>
<p>${link(o.detections)}: ${detections} analysed frames · ${link(o.tracks)}: ${trackCount} tracks</p>

<h2 id="analytics">Analytics</h2>
<p>${link(o.analytics)}</p><pre>${escapeHtml(analytics.slice(0, 20_000))}</pre>

<h2 id="heatmaps">Heatmaps</h2>
<div class="grid">${o.heatmaps.map((h) => `<figure><img src="${escapeHtml(h)}" alt="${escapeHtml(h)}"><figcaption>${link(h, h.split('/').at(-1))}</figcaption></figure>`).join('')}</div>

<h2 id="placement">Placement</h2>
${result.panoramaPlacement ? `<p>panorama.mp4 (${formatBytes(result.panoramaPlacement.sizeBytes)}) → <strong>${escapeHtml(result.panoramaPlacement.storageId)}</strong> in ${escapeHtml(result.panoramaPlacement.location)}</p>` : ''}
<table><tr><th>507 from</th><th>ingest replica</th><th>resolved on</th><th>message</th></tr>
${refused.map((e) => `<tr><td>${escapeHtml(e.storageId)}</td><td>${escapeHtml(e.replica)}</td><td>${escapeHtml(e.resolvedOn ?? 'not placed')}</td><td>${escapeHtml(e.message)}</td></tr>`).join('')}
</table>

<table><tr><th>stage output</th><th>storage element</th><th>size</th></tr>
${result.stored.map((o) => `<tr><td>${link(o.path)}</td><td>${escapeHtml(o.storageId)}</td><td>${formatBytes(o.sizeBytes)}</td></tr>`).join('')}
</table>

<h2 id="timings">Stage timings</h2>
<table><tr><th>step</th><th>wall time</th><th>from</th><th>to</th></tr>
${result.timings.map((t) => `<tr><td>${t.step}</td><td>${s(t.durationMs)}</td><td>${s(t.startMs)}</td><td>${s(t.endMs)}</td></tr>`).join('')}
</table>
<table><tr><th>stage</th><th>attempt</th><th>executions</th><th>stats</th></tr>
${result.job.stages.map((st) => `<tr><td>${st.stage}</td><td>${st.attempt}</td><td>${result.executions[st.stage] ?? 0}</td><td><code>${escapeHtml(JSON.stringify(st.stats ?? {}))}</code></td></tr>`).join('')}
</table>

<h2 id="leaders">Leaders</h2>
<ul><li>capacity monitor: ${escapeHtml(result.leaders.capacityMonitor ?? 'none')}</li>
${Object.entries(result.leaders.orchestratorPartitions)
  .map(([id, p]) => `<li>${escapeHtml(id)}: command partitions ${p.join(', ')}</li>`)
  .join('')}
<li>workers: ${escapeHtml(result.leaders.workers.join(', '))}</li></ul>

<h2 id="files">All files</h2>
<ul>${o.files.map((f) => `<li>${link(f)}</li>`).join('')}<li>report.html</li></ul>
</body></html>
`;
  const path = join(result.outDir, 'report.html');
  await writeFile(path, html);
  return path;
}
