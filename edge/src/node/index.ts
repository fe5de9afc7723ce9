/** The composed edge node: `EdgeNode.start(config)` and `close()`. */
export * from './edge-node.ts';
