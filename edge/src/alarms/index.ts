/** Alarms an operator must see: `Alarms` (raise, clear, list). */
export * from './alarms.ts';
