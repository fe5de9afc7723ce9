import { DEMO_STEPS, type DemoObserver, type DemoStep } from './run-demo.ts';

const LABELS: Record<DemoStep, string> = {
  sample: 'footage    ',
  start: 'core site  ',
  stitch: 'edge stitch',
  upload: 'edge upload',
  detect: 'detect     ',
  track: 'track      ',
  vcam: 'virtual cam',
  analyze: 'analytics  ',
  encode: 'encode HLS ',
  collect: 'out/ report',
};

interface Row {
  state: 'waiting' | 'running' | 'done' | 'failed';
  progress: number;
  note: string;
  startedMs: number | null;
  endedMs: number | null;
}

/**
 * The terminal view of `pnpm demo`: one progress bar per step, redrawn in
 * place on a TTY (ANSI cursor-up), or one line per state change otherwise
 * (CI logs, `--plain`). Info lines (ops page URL, the 507) print above.
 */
export class LiveView implements DemoObserver {
  readonly #out: NodeJS.WriteStream;
  readonly #redraw: boolean;
  readonly #rows = new Map<DemoStep, Row>();
  readonly #t0 = performance.now();
  #drawnLines = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(out: NodeJS.WriteStream, options: { plain?: boolean } = {}) {
    this.#out = out;
    this.#redraw = Boolean(out.isTTY) && !options.plain;
    for (const step of DEMO_STEPS)
      this.#rows.set(step, { state: 'waiting', progress: 0, note: '', startedMs: null, endedMs: null });
    if (this.#redraw) {
      this.#timer = setInterval(() => this.#draw(), 500);
      this.#timer.unref();
    }
  }

  step(step: DemoStep, state: 'running' | 'done' | 'failed', progress: number, note?: string): void {
    const row = this.#rows.get(step);
    if (!row) return;
    const now = performance.now() - this.#t0;
    const changed = row.state !== state;
    if (row.startedMs === null) row.startedMs = now;
    if (state !== 'running') row.endedMs = now;
    row.state = state;
    row.progress = Math.max(0, Math.min(1, progress));
    if (note !== undefined) row.note = note;
    // Progress alone is redrawn by the timer (twice a second); a state change at once.
    if (!changed) return;
    if (this.#redraw) this.#draw();
    else this.#out.write(`${this.#line(step, row)}\n`);
  }

  info(line: string): void {
    this.#clear();
    this.#out.write(`${line}\n`);
    this.#draw();
  }

  /** Stops redrawing and leaves the last view on screen. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#redraw) this.#draw();
    this.#drawnLines = 0;
  }

  #line(step: DemoStep, row: Row): string {
    const width = 24;
    const filled = Math.round(row.progress * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    const mark = { waiting: ' ', running: '…', done: '✔', failed: '✘' }[row.state];
    const end = row.endedMs ?? performance.now() - this.#t0;
    const seconds = row.startedMs === null ? '' : `${((end - row.startedMs) / 1000).toFixed(1)} s`;
    return `${mark} ${LABELS[step]} ${bar} ${String(Math.round(row.progress * 100)).padStart(3)}% ${seconds.padStart(7)}  ${row.note.slice(0, 60)}`;
  }

  #clear(): void {
    if (!this.#redraw || this.#drawnLines === 0) return;
    this.#out.write(`\x1b[${this.#drawnLines}A\x1b[0J`);
    this.#drawnLines = 0;
  }

  #draw(): void {
    if (!this.#redraw) return;
    this.#clear();
    const lines = DEMO_STEPS.map((step) => this.#line(step, this.#rows.get(step) as Row));
    this.#out.write(`${lines.join('\n')}\n`);
    this.#drawnLines = lines.length;
  }
}
