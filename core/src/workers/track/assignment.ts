import { munkres } from 'munkres';

/** The result of a thresholded assignment. */
export interface AssignmentResult {
  /** `[row, column]` pairs. */
  matches: [number, number][];
  unmatchedRows: number[];
  unmatchedColumns: number[];
}

/**
 * Optimal assignment with a cost limit, as `lap.lapjv(cost, extend_cost=True,
 * cost_limit=limit)` which ByteTrack uses: the matrix is extended so that
 * leaving a row or a column unmatched costs `limit / 2`, and pairs costing
 * more than `limit` are never made. Solved with the Hungarian (Munkres)
 * algorithm of the `munkres` package.
 *
 * @param cost - rows × columns, finite costs.
 */
export function assignWithLimit(cost: readonly (readonly number[])[], rows: number, columns: number, limit: number) {
  if (rows === 0 || columns === 0) {
    return {
      matches: [],
      unmatchedRows: [...Array(rows).keys()],
      unmatchedColumns: [...Array(columns).keys()],
    } satisfies AssignmentResult;
  }
  const n = rows + columns;
  const half = limit / 2;
  const extended: number[][] = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n }, (_, j) => {
      if (i < rows && j < columns) {
        const c = cost[i]![j]!;
        return c > limit ? Number.POSITIVE_INFINITY : c;
      }
      if (i < rows) return j - columns === i ? half : Number.POSITIVE_INFINITY;
      if (j < columns) return i - rows === j ? half : Number.POSITIVE_INFINITY;
      return 0;
    }),
  );
  const matches: [number, number][] = [];
  const rowMatched = new Array<boolean>(rows).fill(false);
  const columnMatched = new Array<boolean>(columns).fill(false);
  for (const [i, j] of munkres(extended)) {
    if (i < rows && j < columns && cost[i]![j]! <= limit) {
      matches.push([i, j]);
      rowMatched[i] = true;
      columnMatched[j] = true;
    }
  }
  return {
    matches,
    unmatchedRows: rowMatched.flatMap((m, i) => (m ? [] : [i])),
    unmatchedColumns: columnMatched.flatMap((m, j) => (m ? [] : [j])),
  } satisfies AssignmentResult;
}

/**
 * `scipy.optimize.linear_sum_assignment` semantics on a rectangular matrix:
 * min(rows, columns) pairs minimising (or, with `maximize`, maximising) the
 * total. Used by the TrackEval-faithful metrics.
 */
export function linearSumAssignment(matrix: readonly (readonly number[])[], maximize = false): [number, number][] {
  const rows = matrix.length;
  const columns = rows === 0 ? 0 : matrix[0]!.length;
  if (rows === 0 || columns === 0) return [];
  const cost = maximize ? matrix.map((row) => row.map((v) => -v)) : matrix.map((row) => [...row]);
  return munkres(cost)
    .filter(([i, j]) => i < rows && j < columns)
    .sort((a, b) => a[0] - b[0]) as [number, number][];
}
