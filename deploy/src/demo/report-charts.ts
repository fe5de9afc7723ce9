/** Small inline SVG charts for report.html (no script, no external files). */

const esc = (t: string) => t.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/**
 * A line chart of several series over the same x (index): axes with the
 * series' maximum, a legend, one polyline per series.
 */
export function lineChartSvg(params: {
  series: { label: string; colour: string; values: number[] }[];
  xLabel: string;
  /** x value of index i (e.g. seconds). */
  x: (i: number) => number;
  width?: number;
  height?: number;
}): string {
  const W = params.width ?? 720;
  const H = params.height ?? 220;
  const m = { l: 40, r: 10, t: 24, b: 30 };
  const n = Math.max(1, ...params.series.map((s) => s.values.length));
  const yMax = Math.max(1, ...params.series.flatMap((s) => s.values));
  const xMax = params.x(Math.max(1, n - 1));
  const px = (i: number) => m.l + (params.x(i) / (xMax || 1)) * (W - m.l - m.r);
  const py = (v: number) => H - m.b - (v / yMax) * (H - m.t - m.b);
  const lines = params.series
    .map(
      (s) =>
        `<polyline fill="none" stroke="${s.colour}" stroke-width="1.5" points="${s.values.map((v, i) => `${px(i).toFixed(1)},${py(v).toFixed(1)}`).join(' ')}"/>`,
    )
    .join('');
  const legend = params.series
    .map(
      (s, i) =>
        `<rect x="${m.l + i * 190}" y="6" width="12" height="4" fill="${s.colour}"/><text x="${m.l + 16 + i * 190}" y="12">${esc(s.label)}</text>`,
    )
    .join('');
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" font-size="11" font-family="system-ui,sans-serif">
<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="#888"/><line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="#888"/>
<text x="${m.l - 4}" y="${py(yMax) + 4}" text-anchor="end">${yMax}</text><text x="${m.l - 4}" y="${H - m.b}" text-anchor="end">0</text>
<text x="${W - m.r}" y="${H - 8}" text-anchor="end">${esc(params.xLabel)} (0–${xMax.toFixed(1)})</text>
${legend}${lines}</svg>`;
}

/** A horizontal bar chart: one bar per item, longest first, coloured per item. */
export function barChartSvg(params: {
  items: { label: string; value: number; colour: string }[];
  unit: string;
  width?: number;
}): string {
  const W = params.width ?? 720;
  const row = 14;
  const items = [...params.items].sort((a, b) => b.value - a.value);
  const H = 20 + items.length * row;
  const max = Math.max(1e-9, ...items.map((i) => i.value));
  const l = 60;
  const bars = items
    .map((it, k) => {
      const y = 10 + k * row;
      const w = (it.value / max) * (W - l - 70);
      return `<text x="${l - 4}" y="${y + 10}" text-anchor="end">${esc(it.label)}</text><rect x="${l}" y="${y + 1}" width="${w.toFixed(1)}" height="${row - 3}" fill="${it.colour}"/><text x="${(l + w + 4).toFixed(1)}" y="${y + 10}">${it.value.toFixed(1)} ${esc(params.unit)}</text>`;
    })
    .join('');
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" font-size="10" font-family="system-ui,sans-serif">${bars}</svg>`;
}
