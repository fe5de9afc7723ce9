import type { ChildProcess } from 'node:child_process';

/**
 * The live children of this process, killed when it goes away.
 *
 * Node has no `prctl(PR_SET_PDEATHSIG)` binding, so a child would outlive a
 * parent that exits. This registry covers the exits Node can see:
 * - `process.on('exit')` (normal end, `process.exit()`, uncaught exception):
 *   every child gets SIGKILL synchronously (only sync work runs there);
 * - SIGINT, SIGTERM, SIGHUP: every child gets SIGTERM; when this registry
 *   is the only listener of that signal, it then re-raises the signal so the
 *   process still dies as it would have without a listener.
 * A parent killed with SIGKILL runs none of this; for that, spawnChild
 * starts children through util-linux `setpriv --pdeathsig KILL` where
 * available (see pdeathsig.ts), which asks the kernel to do it.
 *
 * Listeners are installed while at least one child is tracked and removed
 * when the last one ends, so an idle library changes no signal behaviour.
 */
const children = new Set<ChildProcess>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

function killAll(signal: NodeJS.Signals): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill(signal);
      } catch {}
    }
  }
}

const onExit = () => killAll('SIGKILL');

const onSignal = (signal: NodeJS.Signals) => {
  killAll('SIGTERM');
  if (process.listenerCount(signal) === 1) {
    uninstall();
    process.kill(process.pid, signal);
  }
};

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', onExit);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.off('exit', onExit);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

/** Tracks a child until it exits. */
export function trackChild(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  children.add(child);
  install();
  const forget = () => untrackChild(child);
  child.once('exit', forget);
  // A command that cannot start emits 'error' and never 'exit'.
  child.once('error', () => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) forget();
  });
  child.once('close', forget);
}

/** Stops tracking a child (it exited, or its owner took over). */
export function untrackChild(child: ChildProcess): void {
  children.delete(child);
  if (children.size === 0) uninstall();
}

/** How many children are tracked now (for tests and leak checks). */
export function trackedChildCount(): number {
  return children.size;
}
