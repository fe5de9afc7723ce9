/**
 * The detect stage: ONNX YOLO-family detection of players, ball and referees.
 *
 * - `Detector`: model loading (path or URL+sha256 with a cache), CUDA-else-CPU
 *   session, letterbox, batched inference, YOLOv8/11 and YOLOX decoding,
 *   class-wise NMS, tiling chosen from object scale (`tiling.ts`), class map.
 * - `runDetect`: video file → detections JSON Lines (`detections-format.ts`), source frames picked
 *   with their own pts, a first pass estimating the people's height, warnings for a model that looks wrong.
 * - `verify/`: the person and ball verifiers, a second look at each person (ball) box through a window of
 *   its own (the model card's, from player-detector 3.3 and 3.4), fused into the box's score.
 * - `frames/`: ffprobe/ffmpeg video reading shared by every stage.
 */
export * from './appearance.ts';
export * from './camera-motion.ts';
export * from './decode/index.ts';
export * from './detect-options.ts';
export * from './detections-format.ts';
export * from './detector.ts';
export * from './frames/index.ts';
export * from './geometry.ts';
export * from './letterbox.ts';
export * from './model/index.ts';
export * from './model-sanity.ts';
export * from './nms.ts';
export * from './run-detect.ts';
export * from './stage-io.ts';
export * from './tiling.ts';
export * from './verify/index.ts';
