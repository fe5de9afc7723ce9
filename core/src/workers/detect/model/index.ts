/** Models: resolving a local path or URL+sha256 (with a cache), opening an onnxruntime session (CUDA else CPU), the model card, its int8 rendition for the CPU. */
export * from './model-card.ts';
export * from './open-session.ts';
export * from './precision.ts';
export * from './resolve-model.ts';
