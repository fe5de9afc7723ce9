/** Output layouts of YOLO exports and their decoders (raw tensor → scored boxes in model-input pixels). */
export * from './cell-score.ts';
export * from './decode-yolo.ts';
export * from './layout.ts';
