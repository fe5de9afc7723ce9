export * from './connection-env.ts';
export * from './load-config.ts';
export * from './token-list.ts';
