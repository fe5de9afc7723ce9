/** Models: resolving a local path or URL+sha256 (with a cache), opening an onnxruntime session (CUDA else CPU), the model card. */
export * from './model-card.ts';
export * from './open-session.ts';
export * from './resolve-model.ts';
