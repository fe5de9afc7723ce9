/**
 * A machine-readable caveat of the analytics (`summary.json` `warnings`), for the report to show.
 *
 * Codes:
 * - `no_calibration`: no venue calibration, or one without a pitch frame (a self-calibrated rig
 *   without pitch points): positions are image pixels; distances, speeds and sprints are not measured (a pixel is no distance: its size changes across the image).
 * - `no_pitch_region`: without a calibration the pitch is unknown, so people off it (benches,
 *   coaches, spectators) can be counted in teams and heatmaps.
 * - `no_colours`: no video to sample jerseys from: no teams.
 * - `teams_not_found`: fewer than two players had jersey colour samples.
 * - `teams_unbalanced`: the two teams differ by more than {@link teamBalance} allows.
 * - `many_colour_outliers`: more than a quarter of the on-pitch players fit neither team's colour.
 */
export interface AnalyticsWarning {
  code:
    | 'no_calibration'
    | 'no_pitch_region'
    | 'no_colours'
    | 'teams_not_found'
    | 'teams_unbalanced'
    | 'many_colour_outliers';
  message: string;
}

/**
 * Whether two team sizes are balanced: they may differ by at most `max(tolerance, 25 % of the
 * larger)`. A football side has 11 players (fewer after red cards; the tracker may miss some), so
 * 11 v 10 is balanced and 3 v 26 is not.
 *
 * @param a - team A's size (e.g. the median number of its players seen per frame).
 * @param tolerance - absolute difference always allowed. @defaultValue 2
 */
export function teamBalance(a: number, b: number, tolerance = 2): { balanced: boolean; difference: number } {
  const difference = Math.abs(a - b);
  return { balanced: a > 0 && b > 0 && difference <= Math.max(tolerance, 0.25 * Math.max(a, b)), difference };
}
