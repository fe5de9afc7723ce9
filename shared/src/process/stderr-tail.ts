import type { Readable } from 'node:stream';

/**
 * Splits a stream into lines (`\n` or `\r`, so ffmpeg's `\r` progress lines
 * count), calls `onLine` for each non-empty line, and keeps the last
 * `maxLines` lines (each cut to 1000 characters) for error messages.
 */
export class LineTail {
  readonly #maxLines: number;
  readonly #lines: string[] = [];
  #partial = '';
  readonly #onLine: ((line: string) => void) | undefined;

  constructor(maxLines: number, onLine?: (line: string) => void) {
    this.#maxLines = maxLines;
    this.#onLine = onLine;
  }

  /** Feeds the stream into this tail. */
  attach(stream: Readable): void {
    stream.setEncoding('utf8');
    stream.on('data', (text: string) => this.push(text));
    stream.on('end', () => this.flush());
  }

  push(text: string): void {
    const parts = (this.#partial + text).split(/\r\n|\n|\r/);
    this.#partial = parts.pop() ?? '';
    if (this.#partial.length > 64 * 1024) {
      parts.push(this.#partial);
      this.#partial = '';
    }
    for (const line of parts) this.#add(line);
  }

  flush(): void {
    if (this.#partial) this.#add(this.#partial);
    this.#partial = '';
  }

  #add(line: string): void {
    if (!line.trim()) return;
    this.#lines.push(line.length > 1000 ? `${line.slice(0, 1000)}…` : line);
    if (this.#lines.length > this.#maxLines) this.#lines.shift();
    try {
      this.#onLine?.(line);
    } catch {}
  }

  /** The last lines seen, oldest first. */
  lines(): string[] {
    return [...this.#lines];
  }
}
