/** The edge config file: `edgeConfigSchema`, `loadEdgeConfig`, `compileEdgeConfig`. */
export * from './edge-config.ts';
