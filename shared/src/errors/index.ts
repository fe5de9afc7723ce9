export * from './polyvision-error.ts';
