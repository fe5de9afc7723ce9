/**
 * A process that owns one child (`sleep 60`) through spawnChild, prints the
 * child's pid, then either exits (`exit`) or waits to be signalled (`wait`).
 * Usage: node owner.ts exit|wait [pdeathsig|no-pdeathsig]
 */
import { spawnChild } from '../../src/process/index.ts';

const [mode = 'wait', death = 'pdeathsig'] = process.argv.slice(2);
const run = spawnChild('sleep', ['60'], { dieWithParent: death === 'pdeathsig', stdout: 'ignore' });
run.done.catch(() => {});
process.stdout.write(`${run.pid}\n`);
if (mode === 'exit') setTimeout(() => process.exit(0), 50);
else setInterval(() => {}, 1_000);
