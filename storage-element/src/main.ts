/**
 * Process entry of a storage element: `node storage-element/src/main.ts`
 * (or `pnpm polyvision storage-element`). Reads the environment (README,
 * "Configuration"), starts the SE, and closes it gracefully on SIGTERM or
 * SIGINT. A configuration error prints one line and exits 2.
 */
import { runStorageElementProcess } from './run-process.ts';

process.exitCode = await runStorageElementProcess();
