/**
 * Draws one frame's detections on its image (ffmpeg `drawbox`), for docs/detect-real.png.
 *
 *   node bench/detect/render-boxes.ts --pred .cache/bench-detect/default-auto.jsonl --frame 20 \
 *        --image ../shared/datasets/football-players-detection/images/<name>.jpg --out docs/detect-real.png
 *
 * Boxes scoring ≥ --min-score (0.3): player yellow, goalkeeper cyan, referee magenta, ball red; scaled to 1280 wide.
 */
import { execFile } from 'node:child_process';
import { parseArgs, promisify } from 'node:util';
import { readDetectionsFile } from '../../core/src/workers/detect/index.ts';

const { values } = parseArgs({
  options: {
    pred: { type: 'string' },
    frame: { type: 'string', default: '0' },
    image: { type: 'string' },
    out: { type: 'string', default: 'docs/detect-real.png' },
    'min-score': { type: 'string', default: '0.3' },
  },
});
if (!values.pred || !values.image) throw new Error('--pred and --image are required');
const COLOURS: Record<string, string> = { player: 'yellow', goalkeeper: 'cyan', referee: 'magenta', ball: 'red' };
const file = await readDetectionsFile(values.pred);
const frame = file.frames[Number(values.frame)];
if (!frame) throw new Error(`frame ${values.frame} is not in ${values.pred}`);
const boxes = frame.detections.filter((d) => d.score >= Number(values['min-score']));
const filters = boxes.map(
  (d) =>
    `drawbox=x=${d.box[0].toFixed(0)}:y=${d.box[1].toFixed(0)}:w=${(d.box[2] - d.box[0]).toFixed(0)}:h=${(d.box[3] - d.box[1]).toFixed(0)}:color=${COLOURS[d.class]}@0.9:t=3`,
);
await promisify(execFile)('ffmpeg', [
  '-v',
  'error',
  '-y',
  '-i',
  values.image,
  '-vf',
  [...filters, 'scale=1280:-2'].join(','),
  '-frames:v',
  '1',
  '-pred',
  'mixed',
  '-compression_level',
  '9',
  values.out,
]);
process.stdout.write(`${values.out}: ${boxes.length} boxes\n`);
