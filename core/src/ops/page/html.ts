/**
 * The two HTML documents of the ops page, as strings: no template engine,
 * no build step. Script and style come from `/ops/assets/` (same origin; the
 * page's Content-Security-Policy forbids inline script and style).
 */

const head = (title: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="dark">
<title>${title}</title>
<link rel="stylesheet" href="/ops/assets/app.css">
</head>`;

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  );
}

/** The login form (`POST /ops/login`), with an optional error line. */
export function loginPage(error?: string): string {
  return `${head('Sign in · Polyvision ops')}
<body class="login">
<main class="login-box">
  <h1><span class="brand">Polyvision</span> ops</h1>
  <p>The capacity map is for operators. Paste an operator token (one of <code>OPS_TOKENS</code>).</p>
  <form method="post" action="/ops/login">
    <label for="token">Operator token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus spellcheck="false"${error ? ' aria-invalid="true" aria-describedby="login-error"' : ''}>
    ${error ? `<p class="error" role="alert" id="login-error">${escapeHtml(error)}</p>` : ''}
    <button type="submit">Open the map</button>
  </form>
  <p class="hint">The token is sent once; the browser then keeps an HttpOnly session cookie.</p>
</main>
</body>
</html>`;
}

/** The map page: empty regions that app.js fills from the API and the event stream. */
export function mapPage(): string {
  return `${head('Capacity map · Polyvision ops')}
<body>
<a class="skip" href="#storage-title">Skip to storage elements</a>
<header class="top">
  <h1><span class="brand">Polyvision</span> capacity map</h1>
  <p id="connection" class="connection" role="status" aria-live="polite" data-state="connecting">Connecting…</p>
  <form method="post" action="/ops/logout"><button type="submit" class="quiet">Sign out</button></form>
</header>
<main>
  <p id="degraded" class="degraded" role="alert" hidden></p>
  <section class="cards" aria-label="Summary">
    <article class="card" id="card-fleet"><h2>Writable capacity</h2><div class="card-body">–</div></article>
    <article class="card" id="card-health"><h2>Storage elements</h2><div class="card-body">–</div></article>
    <article class="card" id="card-leader"><h2>Capacity-monitor leader</h2><div class="card-body">–</div></article>
    <article class="card" id="card-jobs"><h2>Jobs</h2><div class="card-body">–</div></article>
  </section>
  <section class="split">
    <div class="panel map-panel">
      <h2 id="map-title">Datacenters</h2>
      <div id="map" class="map"></div>
      <p class="legend" aria-hidden="true"><span class="swatch ok"></span>ring: writable capacity used · <span class="glyph">⚠</span> above the warning threshold · <span class="glyph">✗</span> unhealthy SEs</p>
    </div>
    <div class="panel">
      <h2 id="dc-title">Datacenter totals</h2>
      <div id="datacenters"></div>
      <h2 id="replicas-title">Ingest replicas</h2>
      <div id="replicas"></div>
    </div>
  </section>
  <section class="panel">
    <h2 id="storage-title" tabindex="-1">Storage elements</h2>
    <p class="legend"><span class="swatch used"></span>used <span class="swatch reserved"></span>reserved <span class="swatch free"></span>available <span class="swatch other"></span>headroom / other</p>
    <div id="storage" class="table-wrap"></div>
  </section>
  <section class="split">
    <div class="panel">
      <h2 id="jobs-title">Jobs</h2>
      <div id="jobs"></div>
    </div>
    <div class="panel">
      <h2 id="events-title">Recent events</h2>
      <ol id="events" class="events"></ol>
    </div>
  </section>
</main>
<footer id="footer" class="footer"></footer>
<script src="/ops/assets/app.js" type="module"></script>
</body>
</html>`;
}
