import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { barChartSvg, lineChartSvg } from './report-charts.ts';
import { reportChecks } from './report-checks.ts';
import { type ReportData, readReportData, teamsOf } from './report-data.ts';
import { type DemoResult, formatBytes } from './run-demo.ts';
import { insufficientStorageEvents, matchLine } from './summary.ts';

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/**
 * Writes `report.html` into the match folder: one self-contained page (inline
 * CSS and SVG, no script, relative links only) that opens from disk. It shows
 * first what may be wrong ("Check this"), then the virtual camera and the
 * tracks overlay videos, detections against tracks per frame (chart),
 * analytics as tables and a distance chart, heatmaps, the panorama, HLS,
 * placement, 507s, stage timings and leaders. A failed job's report says why
 * and shows what exists.
 *
 * @returns the report's path; `result.checks` is set to the report's "check this" list, which
 *   demo.json and the printed summary carry too.
 */
export async function writeReport(result: DemoResult): Promise<string> {
  const o = result.outputs;
  const link = (path: string | null, label?: string) =>
    path ? `<a href="${escapeHtml(path)}">${escapeHtml(label ?? path)}</a>` : '<em>missing</em>';
  const data = await readReportData(result);
  const checks = reportChecks(result, data);
  result.checks = checks;
  const refused = insufficientStorageEvents(result);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const fps = data.analysisFps ?? result.analysisFps ?? 1;
  const cp = data.cameraPath;
  const share = (v: number | null | undefined) => (v == null ? '–' : `${(v * 100).toFixed(1)} %`);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Polyvision — ${escapeHtml(result.matchId)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1b1f24}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
video,img{max-width:100%;background:#000}table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:left}
.checks li{margin:.3rem 0;padding:.3rem .6rem;border-left:4px solid #d29922;background:#fff8c5;list-style:none}.checks .error{border-color:#cf222e;background:#ffebe9}
.checks{padding:0}.ok{color:#1a7f37}.failed{color:#cf222e}.num{text-align:right;font-variant-numeric:tabular-nums}svg.chart{max-width:100%;height:auto}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:.8rem}pre{background:#f6f8fa;padding:.8rem;overflow:auto;max-height:24rem}
</style></head><body>
<h1>Polyvision demo — match ${escapeHtml(result.matchId)}</h1>
<p>Job <code>${escapeHtml(result.job.job_id)}</code>: <strong class="${result.failure ? 'failed' : ''}">${escapeHtml(result.job.status)}</strong> in ${s(result.totalMs)} ·
bus ${escapeHtml(result.services.bus)}, database ${escapeHtml(result.services.database)}, redis ${escapeHtml(result.services.redis)}</p>
<p id="match-line">${escapeHtml(matchLine(result))}</p>

<h2 id="checks">Check this</h2>
${
  checks.length === 0
    ? '<p class="ok">Nothing looks wrong in the figures below (detections, tracks, ball, crop, teams).</p>'
    : `<ul class="checks">${checks.map((c) => `<li class="${c.level}" data-check="${c.id}">${escapeHtml(c.message)}</li>`).join('')}</ul>`
}

<h2 id="vcam">Virtual camera</h2>
${o.vcam ? `<video controls muted src="${escapeHtml(o.vcam)}" width="${Math.min(960, cp?.output?.outputWidth ?? 960)}"></video>` : '<p><em>missing</em></p>'}
${cp ? vcamTable(cp, share) : ''}
<p>${link(o.vcam)} · camera path ${link(o.cameraPath)}</p>

<h2 id="overlay">Tracks overlay</h2>
<p>Boxes with track ids (grey: off the pitch, not followed), the ball (yellow), the virtual camera's crop (red)${cp?.pitch?.source === 'calibration' ? ', the calibrated pitch (cyan)' : ''}.</p>
${o.overlay ? `<video controls muted src="${escapeHtml(o.overlay)}" width="1040"></video><p>${link(o.overlay)}</p>` : '<p><em>missing</em></p>'}

<h2 id="detections">Detections and tracks</h2>
<p>${link(o.detections)}: ${data.analysedFrames} analysed frames at ${fps} fps · ${link(o.tracks)}: ${data.peopleTrackCount} people tracks, ${data.ballTrackFrames} ball-track frames${o.ballTrack ? ` · ${link(o.ballTrack)}` : ''} · median person score ${data.medianPeopleScore?.toFixed(2) ?? '–'}</p>
${
  data.perFrame.length > 1
    ? lineChartSvg({
        xLabel: 'time, s',
        x: (i) => i / fps,
        series: [
          { label: 'people detections', colour: '#bbb', values: data.perFrame.map((f) => f.detections) },
          { label: 'detections, score ≥ 0.5', colour: '#555', values: data.perFrame.map((f) => f.confident) },
          { label: 'people tracked', colour: '#0969da', values: data.perFrame.map((f) => f.tracked) },
        ],
      })
    : ''
}

<h2 id="analytics">Analytics</h2>
${analyticsSection(data, link(o.analytics))}
<h2 id="panorama">Panorama (${result.panorama.stitched ? 'stitched on the edge' : 'one-camera rig: the camera video itself'})</h2>
<video controls src="${escapeHtml(o.panorama)}" width="1040"></video><p>${link(o.panorama)}</p>

<h2 id="hls">HLS renditions</h2>
<p>Master playlist ${link(o.hlsMaster)} (play it with any HLS player, e.g. <code>ffplay ${escapeHtml(o.hlsMaster ?? '')}</code>).</p>
<ul>${o.hlsPlaylists.map((p) => `<li>${link(p)}</li>`).join('')}</ul>
${o.poster ? `<img src="${escapeHtml(o.poster)}" alt="poster" width="480">` : ''}

<h2 id="heatmaps">Heatmaps</h2>
<div class="grid">${o.heatmaps.map((h) => `<figure><img src="${escapeHtml(h)}" alt="${escapeHtml(h)}"><figcaption>${link(h, h.split('/').at(-1))}</figcaption></figure>`).join('')}</div>

<h2 id="match">The match, segment by segment</h2>
<p>The edge cut the panorama into ${result.segments.length} segments of ${result.segmentS} s (a keyframe at each cut) and uploaded them in order, then its end-of-match marker; ingest made them the segments of one match job. The virtual camera, tracks overlay, tracks and detections above are joined from the segments' outputs (${o.joined.map((f) => link(f)).join(', ') || 'none'}); the HLS playlists, analytics and heatmaps are the match-level outputs the stages built up segment by segment.</p>
<table><tr><th>segment</th><th class="num">duration</th><th class="num">frames</th><th class="num">size</th><th>outputs</th></tr>
${result.segments.map((g) => `<tr><td>${g.index}</td><td class="num">${g.durationS.toFixed(2)} s</td><td class="num">${g.frameCount}</td><td class="num">${formatBytes(g.sizeBytes)}</td><td>${segmentLinks(o.files, g.index, link)}</td></tr>`).join('')}
</table>

<h2 id="placement">Placement</h2>
${result.panoramaPlacement ? `<p>panorama segment 0 (${formatBytes(result.panoramaPlacement.sizeBytes)}) → <strong>${escapeHtml(result.panoramaPlacement.storageId)}</strong> in ${escapeHtml(result.panoramaPlacement.location)}</p>` : ''}
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
<table><tr><th>stage</th><th>segment</th><th>attempt</th><th>executions (all segments)</th><th>stats</th></tr>
${result.job.stages.map((st) => `<tr><td>${st.stage}</td><td>${st.segment_index ?? '–'}</td><td>${st.attempt}</td><td>${result.executions[st.stage] ?? 0}</td><td><code>${escapeHtml(JSON.stringify(st.stats ?? {}))}</code></td></tr>`).join('')}
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

/** The virtual camera's figures from camera-path.json. */
function vcamTable(cp: NonNullable<ReportData['cameraPath']>, share: (v: number | null | undefined) => string): string {
  const out = cp.output;
  const rows: [string, string][] = [
    [
      'output',
      out
        ? `${out.outputWidth}×${out.outputHeight} (${out.sizeSource === 'auto' ? 'follows the panorama' : 'configured'}; at most ${out.worstUpscale?.toFixed(2) ?? '?'}× upscale, limit ${out.maxUpscale ?? '?'}×)`
        : '–',
    ],
    [
      'follows',
      cp.ballSource === 'none' || !cp.ballSource
        ? 'the on-pitch players’ centre (no ball track)'
        : `the ball (${cp.ballSource}) and the players`,
    ],
    [
      'frames following the ball / the players / held',
      cp.follow
        ? `${cp.follow.ballFrames} / ${cp.follow.playerFrames} / ${cp.follow.heldFrames}${cp.follow.ballOutOfPlayFrames ? ` (the ball track out of play in ${cp.follow.ballOutOfPlayFrames} of the players' frames)` : ''}`
        : '–',
    ],
    [
      'ball inside the crop',
      `${share(cp.quality?.ballInCropShare)} of ${cp.quality?.framesWithBall ?? 0} frames with a ball`,
    ],
    ['crop on the pitch', share(cp.quality?.cropOnPitchShare)],
    [
      'people on the pitch',
      cp.people
        ? `${cp.people.onPitch} of ${cp.people.total} observations from ${cp.peopleSource ?? 'tracks'} (pitch from ${cp.pitch?.source ?? '?'})`
        : '–',
    ],
  ];
  return `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`;
}

/** Analytics as tables (teams, players) and a distance chart; says why figures are missing. */
function analyticsSection(data: ReportData, fileLink: string): string {
  const a = data.analytics;
  if (!a) return `<p>${fileLink}</p>`;
  const unit = a.unit ?? '?';
  const speed = unit === 'm' ? 'm/s' : `${unit}/s`;
  const teams = teamsOf(a);
  const players = a.players ?? [];
  const colour = (team?: string) => {
    const c = team ? teams[team]?.colour : undefined;
    return c && c.length === 3 ? `rgb(${c.join(',')})` : '#999';
  };
  const n = (v: number | null | undefined, d = 1) => (v == null ? '–' : v.toFixed(d));
  // One row: players per frame, tracks, and the summed distance and sprints of `ps`.
  const teamRow = (label: string, perFrame: number | null | undefined, tracks: number, ps: typeof players) =>
    `<tr><td>${label}</td><td class="num">${n(perFrame)}</td><td class="num">${tracks}</td><td class="num">${n(ps.reduce((sum, p) => sum + (p.distance ?? 0), 0))}</td><td class="num">${unit === 'm' ? ps.reduce((sum, p) => sum + (p.sprints ?? 0), 0) : '–'}</td></tr>`;
  const teamRows = Object.entries(teams)
    .map(([name, t]) => {
      const ps = players.filter((p) => p.team === name);
      const swatch = `<span style="display:inline-block;width:.8em;height:.8em;background:${colour(name)}"></span>`;
      return teamRow(`${swatch} ${escapeHtml(name)}`, t.playersPerFrame, t.players?.length ?? ps.length, ps);
    })
    .join('');
  // Goalkeepers, the referee and shirts of neither team: not a team, but where they went is worth a row
  // (people per frame from their tracked time).
  const others = players.filter((p) => p.team === 'other');
  const otherSeconds = others.reduce((sum, p) => sum + (p.durationSeconds ?? 0), 0);
  const otherRow =
    others.length === 0
      ? ''
      : teamRow(
          'other <small>(goalkeepers, the referee, shirts of neither team)</small>',
          a.durationSeconds ? otherSeconds / a.durationSeconds : null,
          others.length,
          others,
        );
  const playerRows = [...players]
    .sort((x, y) => (y.distance ?? 0) - (x.distance ?? 0))
    .map(
      (p) =>
        `<tr><td class="num">${p.trackId}</td><td>${escapeHtml((p.role ?? p.class ?? '').replace('_', ' '))}${p.role && p.class && p.role !== 'outfield' && p.role !== p.class ? ` <small>(detected as ${escapeHtml(p.class)})</small>` : ''}</td><td>${escapeHtml(p.team ?? '')}</td><td class="num">${n(p.durationSeconds)}</td><td class="num">${n(p.distance)}</td><td class="num">${n(p.maxSpeed, 2)}</td><td class="num">${n(p.meanSpeed, 2)}</td><td class="num">${unit === 'm' ? (p.sprints ?? '–') : '–'}</td></tr>`,
    )
    .join('');
  const notes = (a.notes ?? []).map((t) => `<li>${escapeHtml(t)}</li>`).join('');
  return `<p>${fileLink} · positions in <strong>${escapeHtml(unit === 'm' ? 'pitch metres (venue calibration)' : unit === 'px' ? 'image pixels (no calibration: no sprint counts)' : unit)}</strong> over ${n(a.durationSeconds)} s</p>
${notes ? `<ul>${notes}</ul>` : ''}
<table><tr><th>team</th><th>players per frame</th><th>tracks</th><th>distance, ${escapeHtml(unit)}</th><th>sprints</th></tr>${teamRows}${otherRow}</table>
${players.length > 0 ? barChartSvg({ unit, items: players.map((p) => ({ label: `#${p.trackId}`, value: p.distance ?? 0, colour: colour(p.team) })) }) : ''}
<details><summary>${players.length} tracked people</summary>
<table><tr><th>track</th><th>role</th><th>team</th><th>time, s</th><th>distance, ${escapeHtml(unit)}</th><th>top speed, ${escapeHtml(speed)}</th><th>mean speed, ${escapeHtml(speed)}</th><th>sprints</th></tr>${playerRows}</table></details>`;
}

/** Links to one segment's vcam video, tracks and HLS playlist (those that exist). */
function segmentLinks(files: readonly string[], index: number, link: (path: string, label?: string) => string): string {
  const folder = `segment-${String(index).padStart(6, '0')}`;
  return [`vcam/${folder}/vcam.mp4`, `track/${folder}/tracks.json`, `encode/${folder}/hls/master.m3u8`]
    .filter((f) => files.includes(f))
    .map((f) => link(f, f.split('/').slice(0, 1).concat(f.split('/').slice(2)).join('/')))
    .join(' · ');
}
