// The ops capacity map in the browser: plain JavaScript, no build step, no
// dependencies. Loads GET /api/v1/capacity-map, then follows the server-sent
// events of /api/v1/capacity-map/events (the session cookie authenticates
// both). Ages of polls are recomputed every second against the server clock.

const $ = (id) => document.getElementById(id);
const state = { map: null, clockOffsetMs: 0, source: null, retryTimer: 0 };

const esc = (value) =>
  String(value ?? '').replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch],
  );

/** Binary units (KiB = 1024 B), one decimal. */
function bytes(n) {
  if (!Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

function duration(ms) {
  if (ms === null || !Number.isFinite(ms)) return 'never';
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

const serverNow = () => Date.now() - state.clockOffsetMs;
const ageOf = (iso) => (iso ? Math.max(0, serverNow() - Date.parse(iso)) : null);
const timeOf = (iso) => (iso ? new Date(iso).toLocaleTimeString([], { hour12: false }) : '–');

const HEALTH = {
  healthy: { glyph: '✓', label: 'healthy' },
  degraded: { glyph: '!', label: 'degraded' },
  unhealthy: { glyph: '✗', label: 'unhealthy' },
  unknown: { glyph: '?', label: 'unknown' },
};

function healthBadge(health, detail) {
  const h = HEALTH[health] ?? HEALTH.unknown;
  const title = detail && detail !== health ? ` title="${esc(detail)}"` : '';
  return `<span class="badge h-${esc(health)}"${title}><span aria-hidden="true">${h.glyph}</span> ${h.label}</span>`;
}

/** A stacked bar: used | reserved | available | rest, each labelled for screen readers. */
function capacityBar(se) {
  const total = se.total_bytes;
  if (!total) return '<span class="muted">no report</span>';
  const pct = (n) => Math.max(0, Math.min(100, (n / total) * 100));
  const used = pct(se.used_bytes);
  const reserved = Math.min(pct(se.reserved_bytes), 100 - used);
  const free = Math.min(pct(se.available_bytes), 100 - used - reserved);
  const label = `${bytes(se.used_bytes)} used, ${bytes(se.reserved_bytes)} reserved, ${bytes(se.available_bytes)} available of ${bytes(total)}`;
  return `<div class="bar" role="img" aria-label="${esc(label)}" title="${esc(label)}" data-used-bytes="${se.used_bytes}" data-reserved-bytes="${se.reserved_bytes}" data-available-bytes="${se.available_bytes}">
    <span class="seg used" style="width:${used.toFixed(2)}%"></span><span class="seg reserved" style="width:${reserved.toFixed(2)}%"></span><span class="seg free" style="width:${free.toFixed(2)}%"></span>
  </div>`;
}

function pollCell(se) {
  const age = ageOf(se.last_poll);
  const stale = age === null || age > se.stale_after_ms;
  const text = age === null ? 'never polled' : `${duration(age)} ago`;
  return `<span class="poll${stale ? ' stale' : ''}" data-last-poll="${esc(se.last_poll ?? '')}" data-stale-after="${se.stale_after_ms}">${esc(text)}${stale ? ' <strong class="tag warn">stale</strong>' : ''}</span>`;
}

function renderCards(map) {
  const t = map.totals;
  $('card-fleet').querySelector('.card-body').innerHTML = `
    <p class="big">${bytes(t.writable_available_bytes)} <span class="unit">free</span></p>
    <p>of ${bytes(t.writable_total_bytes)} writable · <strong>${t.writable_percent_used}%</strong> used</p>
    ${t.warning ? `<p class="tag warn">⚠ at or above ${map.warning_percent}%</p>` : `<p class="tag ok">✓ below ${map.warning_percent}%</p>`}`;
  const counts = { healthy: 0, degraded: 0, unhealthy: 0, unknown: 0 };
  for (const se of map.storage_elements) counts[se.health] = (counts[se.health] ?? 0) + 1;
  const stale = map.storage_elements.filter((se) => se.stale).length;
  $('card-health').querySelector('.card-body').innerHTML = `
    <p class="big">${counts.healthy}<span class="unit"> / ${map.storage_elements.length} healthy</span></p>
    <p>${counts.unhealthy ? `<span class="tag bad">✗ ${counts.unhealthy} unhealthy</span>` : '<span class="tag ok">✓ none unhealthy</span>'}
    ${counts.degraded ? `<span class="tag warn">! ${counts.degraded} degraded</span>` : ''}
    ${stale ? `<span class="tag warn">${stale} stale</span>` : ''}</p>
    <p class="muted">${map.datacenters.length} datacenters</p>`;
  const leader = map.leader;
  const followers = map.instances.filter((i) => !i.leader).map((i) => i.instance_id);
  $('card-leader').querySelector('.card-body').innerHTML = leader
    ? `<p class="big mono" id="leader-id" data-term="${leader.term}">${esc(leader.instance_id)}</p>
       <p>term <strong id="leader-term">${leader.term}</strong> · since ${esc(timeOf(leader.since))}</p>
       <p class="muted">followers: <span id="followers">${followers.length ? followers.map(esc).join(', ') : 'none'}</span></p>`
    : `<p class="big" id="leader-id" data-term="">${map.monitor_enabled ? '<span class="tag bad">✗ no leader</span>' : 'monitor disabled'}</p>
       <p class="muted">followers: <span id="followers">${followers.map(esc).join(', ') || 'none'}</span></p>`;
  const jobs = map.jobs;
  let jobsBody = `<p class="muted">${esc(jobs.error ?? '')}</p>`;
  if (!jobs.error) {
    const sum = (k) => jobs.stages.reduce((a, s) => a + s[k], 0);
    jobsBody = `<p class="big">${sum('running')}<span class="unit"> stages running</span></p>
      <p>${sum('queued')} queued · ${sum('failed') ? `<span class="tag bad">✗ ${sum('failed')} failed (24 h)</span>` : '0 failed (24 h)'}</p>${
        jobs.claim_problems?.length
          ? `<p><span class="tag bad">✗ ${jobs.claim_problems.length} partition(s) unclaimed</span></p>`
          : ''
      }`;
  }
  $('card-jobs').querySelector('.card-body').innerHTML = jobsBody;
}

/** Positions of datacenters in a 1000×520 box: projected coordinates fitted with a margin, else a row. */
function layout(datacenters) {
  const W = 1000;
  const H = 520;
  const M = 110;
  const pts = datacenters.map((dc) => {
    const c = dc.coordinates;
    if (!c) return null;
    if ('lat' in c) return { x: ((c.lon + 180) / 360) * 2000, y: ((90 - c.lat) / 180) * 1000, geo: true };
    return { x: c.x, y: -c.y, geo: false };
  });
  const placed = pts.filter(Boolean);
  const out = [];
  if (placed.length === 0) {
    datacenters.forEach((_, i) => {
      out.push({ x: M + ((W - 2 * M) * (i + 0.5)) / datacenters.length, y: H / 2 });
    });
    return { positions: out, geo: false, project: null };
  }
  const xs = placed.map((p) => p.x);
  const ys = placed.map((p) => p.y);
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const span = Math.max(x1 - x0, y1 - y0, 1e-9);
  if (x1 - x0 < span) [x0, x1] = [(x0 + x1) / 2 - span / 2, (x0 + x1) / 2 + span / 2];
  if (y1 - y0 < span) [y0, y1] = [(y0 + y1) / 2 - span / 2, (y0 + y1) / 2 + span / 2];
  const scale = Math.min((W - 2 * M) / (x1 - x0), (H - 2 * M) / (y1 - y0));
  const cx = (x0 + x1) / 2;
  const cy = (y0 + y1) / 2;
  const project = (p) => ({ x: W / 2 + (p.x - cx) * scale, y: H / 2 + (p.y - cy) * scale });
  let spare = 0;
  pts.forEach((p) => {
    out.push(p ? project(p) : { x: M + 160 * spare++, y: H - M });
  });
  separate(out, 190, W, H);
  return { positions: out, geo: placed[0].geo, project, scale };
}

/** Pushes nodes closer than `minGap` apart (neighbouring datacenters stay readable), kept inside the box. */
function separate(nodes, minGap, W, H) {
  for (let round = 0; round < 80; round++) {
    let moved = false;
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i];
        const b = nodes[j];
        let dx = b.x - a.x;
        let dy = b.y - a.y;
        let d = Math.hypot(dx, dy);
        if (d >= minGap) continue;
        if (d < 1e-6) {
          dx = Math.cos(j);
          dy = Math.sin(j);
          d = 1;
        }
        const push = (minGap - d) / 2 + 0.5;
        a.x -= (dx / d) * push;
        a.y -= (dy / d) * push;
        b.x += (dx / d) * push;
        b.y += (dy / d) * push;
        moved = true;
      }
    }
    for (const n of nodes) {
      n.x = Math.max(80, Math.min(W - 80, n.x));
      n.y = Math.max(80, Math.min(H - 110, n.y));
    }
    if (!moved) break;
  }
}

function ring(cx, cy, r, percent) {
  const p = Math.max(0, Math.min(100, percent)) / 100;
  const circumference = 2 * Math.PI * r;
  return `<circle cx="${cx}" cy="${cy}" r="${r}" class="ring-bg"/>
    <circle cx="${cx}" cy="${cy}" r="${r}" class="ring-fg" stroke-dasharray="${(p * circumference).toFixed(1)} ${circumference.toFixed(1)}" transform="rotate(-90 ${cx} ${cy})"/>`;
}

function renderMap(map) {
  const { positions, geo, project, scale } = layout(map.datacenters);
  let grid = '';
  if (geo && project) {
    const step = scale > 40 ? 2 : scale > 10 ? 5 : scale > 3 ? 15 : 30;
    for (let lon = -180; lon <= 180; lon += step) {
      const a = project({ x: ((lon + 180) / 360) * 2000, y: 0 });
      if (a.x > -10 && a.x < 1010)
        grid += `<line x1="${a.x.toFixed(1)}" y1="0" x2="${a.x.toFixed(1)}" y2="520" class="grid"/>`;
    }
    for (let lat = -90; lat <= 90; lat += step) {
      const a = project({ x: 0, y: ((90 - lat) / 180) * 1000 });
      if (a.y > -10 && a.y < 530)
        grid += `<line x1="0" y1="${a.y.toFixed(1)}" x2="1000" y2="${a.y.toFixed(1)}" class="grid"/>`;
    }
  } else {
    for (let x = 50; x < 1000; x += 100) grid += `<line x1="${x}" y1="0" x2="${x}" y2="520" class="grid"/>`;
    for (let y = 60; y < 520; y += 100) grid += `<line x1="0" y1="${y}" x2="1000" y2="${y}" class="grid"/>`;
  }
  const leaderNote = map.leader ? `leader ${map.leader.instance_id} · term ${map.leader.term}` : 'no leader';
  const nodes = map.datacenters
    .map((dc, i) => {
      const p = positions[i];
      const t = dc.totals;
      const cls =
        t.unhealthy === t.storage_elements ? 'dc down' : t.warning ? 'dc warn' : t.unhealthy ? 'dc partial' : 'dc';
      const status = [t.warning ? '⚠' : '', t.unhealthy ? `✗${t.unhealthy}` : ''].filter(Boolean).join(' ');
      const label = `${dc.location}: ${t.writable_percent_used}% of writable capacity used, ${bytes(t.writable_available_bytes)} free, ${t.storage_elements} storage elements, ${t.unhealthy} unhealthy${t.warning ? ', above the warning threshold' : ''}`;
      return `<a href="#dc-${esc(dc.location)}" class="${cls}" aria-label="${esc(label)}" data-dc="${esc(dc.location)}">
        <title>${esc(label)}</title>
        <circle cx="${p.x.toFixed(1)}" cy="${p.y.toFixed(1)}" r="46" class="dc-disc"/>
        ${ring(p.x.toFixed(1), p.y.toFixed(1), 40, t.writable_percent_used)}
        <text x="${p.x.toFixed(1)}" y="${(p.y + 6).toFixed(1)}" class="dc-pct">${Math.round(t.writable_percent_used)}%</text>
        <text x="${p.x.toFixed(1)}" y="${(p.y + 70).toFixed(1)}" class="dc-name">${esc(dc.location)}</text>
        <text x="${p.x.toFixed(1)}" y="${(p.y + 90).toFixed(1)}" class="dc-sub">${t.storage_elements} SE · ${esc(bytes(t.writable_available_bytes))} free</text>
        ${status ? `<text x="${(p.x + 40).toFixed(1)}" y="${(p.y - 40).toFixed(1)}" class="dc-status">${esc(status)}</text>` : ''}
      </a>`;
    })
    .join('');
  $('map').innerHTML =
    `<svg viewBox="0 0 1000 520" role="group" aria-labelledby="map-title" preserveAspectRatio="xMidYMid meet">
    <rect x="0" y="0" width="1000" height="520" class="sea"/>${grid}
    <text x="16" y="28" class="map-note">${esc(geo ? 'equirectangular, from configured lat/lon' : 'layout from configured x/y (or evenly spaced)')} · ${esc(leaderNote)}</text>
    ${nodes}</svg>`;
}

function renderDatacenters(map) {
  const rows = map.datacenters
    .map((dc) => {
      const t = dc.totals;
      return `<tr id="dc-${esc(dc.location)}" data-dc="${esc(dc.location)}" tabindex="-1">
        <th scope="row">${esc(dc.location)}</th>
        <td class="num">${t.storage_elements}${t.unhealthy ? ` <span class="tag bad">✗ ${t.unhealthy}</span>` : ''}</td>
        <td class="num">${bytes(t.writable_available_bytes)}</td>
        <td class="num">${bytes(t.writable_total_bytes)}</td>
        <td class="num">${t.writable_percent_used}% ${t.warning ? '<span class="tag warn">⚠ warning</span>' : ''}</td>
      </tr>`;
    })
    .join('');
  const t = map.totals;
  $('datacenters').innerHTML = `<table class="grid-table">
    <caption class="sr">Writable capacity per datacenter; warning at ${map.warning_percent}% used</caption>
    <thead><tr><th scope="col">Datacenter</th><th scope="col" class="num">SEs</th><th scope="col" class="num">Writable free</th><th scope="col" class="num">Writable total</th><th scope="col" class="num">Used</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">All</th><td class="num">${t.storage_elements}</td><td class="num">${bytes(t.writable_available_bytes)}</td><td class="num">${bytes(t.writable_total_bytes)}</td>
    <td class="num" id="total-used">${t.writable_percent_used}% ${t.warning ? '<span class="tag warn">⚠ warning</span>' : ''}</td></tr></tfoot>
  </table>
  <p class="muted small">Writable = mode edit or rw, reachable, not unhealthy. Warning at ${map.warning_percent}% used (OPS_WARNING_PERCENT).</p>`;
}

function renderStorage(map) {
  const rows = map.storage_elements
    .map(
      (se) => `<tr data-se="${esc(se.storage_id)}" data-health="${esc(se.health)}" class="h-row-${esc(se.health)}">
      <th scope="row" class="mono">${esc(se.storage_id)}</th>
      <td>${esc(se.location)}</td>
      <td><span class="mode mode-${esc(se.mode ?? 'none')}">${esc(se.mode ?? '–')}</span>${se.writable ? '' : se.mode ? ' <span class="muted small">read-only</span>' : ''}</td>
      <td>${healthBadge(se.health, se.health_detail)}${se.full_marked_at ? ' <span class="tag warn">full (507)</span>' : ''}</td>
      <td class="bar-cell">${capacityBar(se)}</td>
      <td class="num" data-field="percent">${se.total_bytes ? `${se.percent_used.toFixed(1)}%` : '–'}</td>
      <td class="num" data-field="available">${bytes(se.available_bytes)}<span class="muted small"> / ${bytes(se.total_bytes)}</span>${se.health === 'unhealthy' && se.total_bytes ? '<br><span class="muted small">last known</span>' : ''}</td>
      <td data-field="poll">${pollCell(se)}</td>
      <td class="num" data-field="507">${se.insufficient_storage_last_hour ? `<span class="tag warn">${se.insufficient_storage_last_hour}</span>` : '0'}</td>
    </tr>`,
    )
    .join('');
  $('storage').innerHTML = `<table class="grid-table se-table">
    <thead><tr><th scope="col">Storage element</th><th scope="col">Datacenter</th><th scope="col">Mode</th><th scope="col">Health</th>
    <th scope="col">Capacity</th><th scope="col" class="num">Used</th><th scope="col" class="num">Available</th><th scope="col">Last poll</th><th scope="col" class="num"><abbr title="507 Insufficient Storage answers in the last hour">507s / h</abbr></th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}

const EVENT_GLYPH = {
  leader_changed: '♛',
  leader_vacant: '✗',
  insufficient_storage: '507',
  lazy_update: '↻',
  storage_unhealthy: '✗',
  storage_healthy: '✓',
  storage_degraded: '!',
};

function renderEvents(map) {
  $('events').innerHTML =
    map.events
      .map(
        (
          e,
        ) => `<li class="ev ev-${esc(e.type)}" data-type="${esc(e.type)}"><span class="ev-glyph" aria-hidden="true">${esc(EVENT_GLYPH[e.type] ?? '•')}</span>
        <time datetime="${esc(e.at)}">${esc(timeOf(e.at))}</time> <span class="ev-msg">${esc(e.message)}</span></li>`,
      )
      .join('') || '<li class="muted">No events yet.</li>';
  $('replicas').innerHTML = `<ul class="replicas">${map.instances
    .map(
      (i) =>
        `<li data-instance="${esc(i.instance_id)}"><span class="mono">${esc(i.instance_id)}</span> ${i.leader ? '<span class="tag ok">♛ leader</span>' : '<span class="tag">follower</span>'}${i.instance_id === map.served_by ? ' <span class="muted small">(serving this page)</span>' : ''}</li>`,
    )
    .join('')}</ul>`;
}

function renderJobs(map) {
  const jobs = map.jobs;
  if (jobs.error) {
    $('jobs').innerHTML = `<p class="muted">${esc(jobs.error)}</p>`;
    return;
  }
  const stages = jobs.stages.length
    ? `<table class="grid-table"><thead><tr><th scope="col">Stage</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Running</th><th scope="col" class="num">Failed (24 h)</th><th scope="col" class="num">Done (24 h)</th></tr></thead>
      <tbody>${jobs.stages
        .map(
          (s) =>
            `<tr data-stage="${esc(s.stage)}"><th scope="row">${esc(s.stage)}</th><td class="num">${s.queued}</td><td class="num">${s.running}</td><td class="num">${s.failed ? `<span class="tag bad">${s.failed}</span>` : 0}</td><td class="num">${s.completed}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<p class="muted">No stages queued or run in the last 24 h.</p>';
  const latest = jobs.latest
    .map(
      (
        j,
      ) => `<li data-job="${esc(j.job_id)}"><div class="job-head"><span class="mono">${esc(j.organization_id)}/${esc(j.match_id)}</span>
        <span class="tag st-${esc(j.status)}">${esc(j.status)}</span>${j.current_stage ? ` <span class="muted small">at ${esc(j.current_stage)}</span>` : ''}</div>
        <div class="progress" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${j.progress_percent}" aria-label="${esc(j.job_id)} progress"><span style="width:${Math.max(0, Math.min(100, j.progress_percent))}%"></span></div>
        <span class="small muted">${j.progress_percent}% · ${esc(j.job_id)}</span>${matchLine(j.match)}</li>`,
    )
    .join('');
  const problems = (jobs.claim_problems ?? [])
    .map(
      (p) =>
        `<li data-claim-problem="${p.partition}"><span class="tag bad">✗ partition ${p.partition} unclaimed</span> <span class="mono">${esc(p.owner)}</span> cannot claim it: ${p.failures} failed claims since ${esc(timeOf(p.since))} — <span class="small">${esc(p.error)}</span></li>`,
    )
    .join('');
  $('jobs').innerHTML =
    `${problems ? `<ul class="claim-problems" id="claim-problems">${problems}</ul>` : ''}${stages}<h3>Latest jobs</h3><ul class="jobs-list">${latest || '<li class="muted">No jobs yet.</li>'}</ul>`;
}

function render(map) {
  state.map = map;
  state.clockOffsetMs = Date.now() - Date.parse(map.generated_at);
  // Re-rendering replaces the map's links: keep the keyboard focus where it was.
  const focused = document.activeElement?.closest?.('#map [data-dc]')?.getAttribute('data-dc');
  renderCards(map);
  renderMap(map);
  renderDatacenters(map);
  renderStorage(map);
  renderEvents(map);
  renderJobs(map);
  renderDegraded(map);
  if (focused) document.querySelector(`#map [data-dc="${CSS.escape(focused)}"]`)?.focus();
  $('footer').textContent =
    `Served by ${map.served_by} · map of ${timeOf(map.generated_at)} · poll base interval ${duration(map.poll_base_interval_ms)}`;
  document.body.dataset.generatedAt = map.generated_at;
}

/** Redis unreachable: say so above everything (the rest is the last map read). */
function renderDegraded(map) {
  const el = $('degraded');
  const redis = map.redis;
  if (!redis || redis.reachable) {
    el.hidden = true;
    el.textContent = '';
    return;
  }
  el.hidden = false;
  el.textContent =
    `Redis unreachable since ${timeOf(redis.since)}: showing the state of ${redis.as_of ? timeOf(redis.as_of) : 'nothing read yet'}. ` +
    'Ingest keeps placing uploads on its last known capacity (the storage elements’ reservations decide).';
}

/** Every second: ages and stale marks move on even when no new map arrives. */
function tickAges() {
  for (const el of document.querySelectorAll('[data-last-poll]')) {
    const se = state.map?.storage_elements.find((s) => s.last_poll === el.dataset.lastPoll);
    if (se) el.outerHTML = pollCell(se);
  }
}

function setConnection(kind, text) {
  const el = $('connection');
  el.dataset.state = kind;
  el.textContent = text;
}

async function loadOnce() {
  const response = await fetch('/api/v1/capacity-map', { credentials: 'same-origin' });
  if (response.status === 401) {
    window.location.assign('/ops');
    return false;
  }
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  render(await response.json());
  return true;
}

function connect() {
  clearTimeout(state.retryTimer);
  state.source?.close();
  const source = new EventSource('/api/v1/capacity-map/events');
  state.source = source;
  source.addEventListener('open', () => setConnection('live', '● Live'));
  source.addEventListener('capacity-map', (event) => {
    setConnection('live', '● Live');
    render(JSON.parse(event.data));
  });
  source.addEventListener('error', () => {
    setConnection('down', '○ Reconnecting…');
    if (source.readyState === EventSource.CLOSED) {
      // Refused (e.g. the session expired) or the replica is gone: check, then retry.
      state.retryTimer = setTimeout(() => {
        loadOnce()
          .then((ok) => ok && connect())
          .catch(() => connect());
      }, 3000);
    }
  });
}

loadOnce()
  .catch((error) => setConnection('down', `○ ${error.message}`))
  .finally(connect);
setInterval(tickAges, 1000);

/** A match job's progress under its line: live or ended, segments, processed per stage, lag, gaps. */
function matchLine(m) {
  if (!m) return '';
  const processed = Object.entries(m.processed)
    .map(([stage, n]) => `${esc(stage)} ${n}`)
    .join(' · ');
  const state = m.live ? '<span class="tag st-running">live</span>' : `ended (${esc(m.ended_by ?? '')})`;
  const gaps = m.gaps.length ? ` · <span class="tag bad">gaps ${esc(m.gaps.join(','))}</span>` : '';
  const missing = m.segments_missing.length ? ` · missing ${esc(m.segments_missing.join(','))}` : '';
  const failed = m.segments_failed?.length
    ? ` · <span class="tag bad">failed ${esc(m.segments_failed.join(','))}</span>`
    : '';
  return `<div class="small match-progress" data-match-progress>${state} · ${m.segments_received} segments · processed ${processed} · lag ${m.lag_segments} segments (${m.lag_s} s)${gaps}${missing}${failed}</div>`;
}
