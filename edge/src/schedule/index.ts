/** The match schedule and timed jobs: `recordingWindow`, `activeMatch`, `startScheduler` (node-cron). */
export * from './match-window.ts';
export * from './scheduler.ts';
