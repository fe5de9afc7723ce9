import type { ByteRange } from '../backends/blob-backend.ts';

/** Outcome of {@link parseRange}. */
export type RangeOutcome = { kind: 'whole' } | { kind: 'partial'; range: ByteRange } | { kind: 'unsatisfiable' };

/**
 * Parses a `Range` header against a representation of `sizeBytes` (RFC 9110
 * §14.1.2, §14.2). One range is served as `206`; a header that is not a
 * `bytes` range, is malformed, or asks several ranges is ignored (whole
 * representation, `200`), as §14.2 allows. A syntactically valid range that
 * starts at or past the end, or a zero suffix, is `unsatisfiable` (`416`).
 */
export function parseRange(header: string | undefined, sizeBytes: number): RangeOutcome {
  if (header === undefined) return { kind: 'whole' };
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return { kind: 'whole' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || sizeBytes === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, sizeBytes - suffix), end: sizeBytes - 1 } };
  }
  const start = Number(first);
  if (!Number.isSafeInteger(start) || start >= sizeBytes) return { kind: 'unsatisfiable' };
  const end = last === '' ? sizeBytes - 1 : Math.min(Number(last), sizeBytes - 1);
  if (!Number.isSafeInteger(end) && last !== '') return { kind: 'partial', range: { start, end: sizeBytes - 1 } };
  if (end < start) return { kind: 'whole' };
  return { kind: 'partial', range: { start, end } };
}

/** Whether an `If-None-Match` header value matches `etag` (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === bare);
}
