/**
 * Child processes that die with their owner (`spawnChild`: AbortSignal,
 * SIGTERM→SIGKILL escalation, exit/signal registry, kernel parent-death
 * signal via setpriv), stderr tails in errors, stdin backpressure, and
 * `readFrames` for fixed-size raw frames from stdout.
 */
export * from './child-registry.ts';
export * from './pdeathsig.ts';
export * from './read-frames.ts';
export * from './spawn-child.ts';
export * from './stderr-tail.ts';
export * from './stop-signal.ts';
