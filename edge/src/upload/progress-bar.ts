/**
 * The CLI progress bar for uploads (cli-progress): one bar for the file in
 * flight, with bytes, rate and the spool backlog. Only used when stdout is a TTY.
 */
import cliProgress from 'cli-progress';
import type { SegmentRow } from '../spool/index.ts';

/** A progress bar bound to the uploader's `onProgress`. */
export interface UploadProgressBar {
  update(row: SegmentRow, bytesSent: number, bytesTotal: number, backlogCount: number): void;
  stop(): void;
}

/** Creates the bar on `stream` (a TTY). */
export function createUploadProgressBar(stream: NodeJS.WriteStream = process.stdout): UploadProgressBar {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: 'upload {file} |{bar}| {percentage}% {sentMiB}/{totalMiB} MiB · backlog {backlog}',
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let current: number | null = null;
  const mib = (b: number) => (b / 1048576).toFixed(1);
  return {
    update(row, sent, total, backlog) {
      const payload = { file: row.fileName, sentMiB: mib(sent), totalMiB: mib(total), backlog };
      if (current !== row.id) {
        if (current !== null) bar.stop();
        bar.start(total, sent, payload);
        current = row.id;
      } else {
        bar.update(sent, payload);
      }
    },
    stop() {
      bar.stop();
    },
  };
}
