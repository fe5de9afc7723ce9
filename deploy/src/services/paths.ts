import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (three levels above this file: deploy/src/services). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Templates and the Kafka pom: `deploy/services/`. */
export const templatesDir = path.join(repoRoot, 'deploy', 'services');
