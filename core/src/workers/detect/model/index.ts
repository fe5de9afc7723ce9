/** Models: resolving a local path or URL+sha256 (with a cache), opening an onnxruntime session (CUDA else CPU). */
export * from './open-session.ts';
export * from './resolve-model.ts';
