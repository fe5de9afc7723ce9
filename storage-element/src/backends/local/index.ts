/** The local-filesystem backend: files under `<STORAGE_DATA_DIR>/files`, capacity from `statfs` and the quota. */
export * from './local-backend.ts';
