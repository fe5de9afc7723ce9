/**
 * `polyvision edge`: runs an edge capture node from its config file
 * (see edge/README.md for the file and edge/src/node/edge-node.ts).
 */
import { parseArgs } from 'node:util';
import {
  createUploadProgressBar,
  EdgeNode,
  loadEdgeConfig,
  recordingWindow,
  type UploadProgressBar,
} from '@polyvision/edge';
import { createLogger, PolyvisionError, type StopSignal, ValidationError } from '@polyvision/shared';
import { listenForStop, parseCommandLine } from '../command-kit.ts';
import { runCalibrate } from './edge-calibrate.ts';

const HELP = `Usage: pnpm polyvision edge --config edge.json [options]
       pnpm polyvision edge calibrate --cameras a.mp4,b.mp4 --out venue.json   (see edge calibrate --help)

Runs the edge capture node: records the cameras of the config during the
scheduled matches (from schedule.lead_s before kickoff), stitches the
panorama on site, keeps every segment in the spool until the core confirmed
its sha256, and uploads over tus. Status API: http://<status.host>:<status.port>/api/v1/status

Options:
  --config FILE          edge config (JSON; see edge/README.md)        required
  --match-id ID          also record this match now …
  --duration SECONDS     … for this long (with --match-id)
  --exit-when-idle       exit once nothing is scheduled any more and the upload backlog is empty
  --quiet                no progress bar
  -h, --help             this help

Stops on SIGINT/SIGTERM: open segments are closed and spooled, uploads stay resumable.
Exit status: 0 stopped cleanly, 2 bad config or calibration, 1 other failures.
`;

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'calibrate') return runCalibrate(argv.slice(1));
  const parsed = parseCommandLine('edge', HELP, () => parse(argv));
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (!values.config) {
    process.stderr.write(`edge: --config FILE is required\n\n${HELP}`);
    return 2;
  }
  let recordNow: { matchId: string; durationS: number } | undefined;
  if (values['match-id'] !== undefined || values.duration !== undefined) {
    const durationS = Number(values.duration);
    if (!values['match-id'] || !Number.isFinite(durationS) || durationS <= 0) {
      process.stderr.write('edge: --match-id ID and --duration SECONDS (> 0) go together\n');
      return 2;
    }
    recordNow = { matchId: values['match-id'], durationS };
  }
  const logger = createLogger('edge');
  const stopping = listenForStop(process.env, logger);
  if (typeof stopping === 'number') return stopping;
  let bar: UploadProgressBar | null = null;
  let node: EdgeNode;
  try {
    const config = await loadEdgeConfig(values.config);
    if (!values.quiet && process.stdout.isTTY) bar = createUploadProgressBar();
    node = await EdgeNode.start(config, {
      logger,
      recordNow,
      onUploadProgress: bar
        ? (row, sent, total) => bar?.update(row, sent, total, node.spool.journal.backlog().count)
        : undefined,
    });
  } catch (error) {
    const e = error as PolyvisionError;
    process.stderr.write(`edge: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    return error instanceof ValidationError || (error instanceof PolyvisionError && error.code.startsWith('stitch_'))
      ? 2
      : 1;
  }
  let stop = null as StopSignal | null; // set by the signal handler below
  const stopped = new Promise<void>((resolve) => {
    stopping.then((signalled) => {
      stop = signalled;
      resolve();
    });
    if (values['exit-when-idle']) {
      const timer = setInterval(() => {
        const now = Date.now();
        const pending = node.matches.some(
          (m) => recordingWindow(m, node.config.schedule.lead_s, node.config.schedule.tail_s).endMs > now,
        );
        if (!pending && !node.recordingMatchId && node.spool.journal.backlog().count === 0) {
          clearInterval(timer);
          resolve();
        }
      }, 500);
    }
  });
  await stopped;
  stop?.step('stop recording, pause uploads (the spool keeps them), close');
  await node.close();
  stop?.closed();
  bar?.stop();
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      'match-id': { type: 'string' },
      duration: { type: 'string' },
      'exit-when-idle': { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
