/** OpenCV compiled to WebAssembly, loaded once per process (the edge's self-calibration, the detect stage's camera motion). */
export * from './opencv.ts';
