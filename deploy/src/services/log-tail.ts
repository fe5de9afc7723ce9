import { readFile } from 'node:fs/promises';

/** The last `lines` lines of a log file, or a note that it cannot be read. */
export async function logTail(file: string, lines = 20): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return `(no log at ${file})`;
  }
}
