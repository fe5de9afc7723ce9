/**
 * A service process for the shutdown-deadline test: prints `ready`, waits
 * for SIGTERM through `untilStopSignal` (deadline from argv[3], ms), then
 * closes the way argv[2] says: `clean` (at once), `hang` (a close step that
 * never ends), `handle` (closes, but leaves an interval running).
 */
import { untilStopSignal } from '../../src/process/stop-signal.ts';

const mode = process.argv[2];
const deadlineMs = Number(process.argv[3]);
const keepAlive = setInterval(() => {}, 60_000);
const stopping = untilStopSignal({ deadlineMs }); // the handlers are in place before `ready`
process.stdout.write('ready\n');
const stop = await stopping;
clearInterval(keepAlive);
stop.step('leave the consumer group');
if (mode === 'hang') {
  setInterval(() => {}, 60_000);
  await new Promise(() => {});
}
if (mode === 'handle') setInterval(() => {}, 60_000);
stop.closed();
