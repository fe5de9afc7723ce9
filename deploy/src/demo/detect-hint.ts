/**
 * What to do when the repository's detector found nothing: it knows football seen from elevated
 * stadium cameras only (core/models/player-detector/MODEL_CARD.md), so other footage (a street, a
 * phone at eye level) needs another model.
 *
 * @param error - the failed stage's error (`{code, message}`), any shape.
 * @param stageEnv - the demo's worker variables (`DETECT_MODEL_PATH` set: the user chose a model).
 * @returns a line starting with "\nHINT:" when the detect stage failed with `no_detections` on the
 *   default model; otherwise "".
 */
export function nothingDetectedHint(error: unknown, stageEnv: Readonly<Record<string, string | undefined>>): string {
  if ((error as { code?: unknown } | null | undefined)?.code !== 'no_detections' || stageEnv.DETECT_MODEL_PATH) {
    return '';
  }
  return (
    '\nHINT: the default detector is trained on football filmed from elevated stadium cameras; for other footage' +
    ' give a model, e.g. --model ../shared/models/yolox_nano.onnx --model-layout yolox (COCO person = player)'
  );
}
