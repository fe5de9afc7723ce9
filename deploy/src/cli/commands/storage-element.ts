import { parseArgs } from 'node:util';
import { runStorageElementProcess } from '@polyvision/storage-element';
import { parseCommandLine } from '../command-kit.ts';

const HELP = `Usage: pnpm polyvision storage-element [options]

Runs one storage element (SE): capacity report, reservations, resumable
uploads, Range reads; local folder or S3 backend. Configured by environment
variables (all documented in storage-element/README.md); the options below
override the matching variable. SIGTERM or SIGINT closes it gracefully.

Options:
  --id <id>            STORAGE_ELEMENT_ID
  --location <dc>      STORAGE_DATACENTER_LOCATION
  --data-dir <path>    STORAGE_DATA_DIR
  --port <n>           STORAGE_PORT (0 = any free port)        [8300]
  --mode <m>           STORAGE_MODE: edit | rw | ro | ar       [rw]
  --type <t>           STORAGE_TYPE: local | s3                [local]
  --tokens <a,b>       STORAGE_TOKENS (accepted bearer tokens)
  -h, --help

Required: STORAGE_ELEMENT_ID, STORAGE_DATACENTER_LOCATION, STORAGE_DATA_DIR,
STORAGE_TOKENS (and the STORAGE_S3_* settings with --type s3).
Prints one JSON line {"event":"listening","url":...} on stdout when ready;
logs are JSON lines on stderr. Exit status 2 on a configuration error.
`;

const FLAGS = {
  id: 'STORAGE_ELEMENT_ID',
  location: 'STORAGE_DATACENTER_LOCATION',
  'data-dir': 'STORAGE_DATA_DIR',
  port: 'STORAGE_PORT',
  mode: 'STORAGE_MODE',
  type: 'STORAGE_TYPE',
  tokens: 'STORAGE_TOKENS',
} as const;

/** `polyvision storage-element [options]`: runs an SE until SIGTERM/SIGINT. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('storage-element', HELP, () => parse(argv));
  if (typeof parsed === 'number') return parsed;
  const env: Record<string, string | undefined> = { ...process.env };
  for (const [flag, variable] of Object.entries(FLAGS)) {
    const value = parsed.values[flag as keyof typeof FLAGS];
    if (value !== undefined) env[variable] = value;
  }
  return runStorageElementProcess(env);
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    options: {
      ...Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: 'string' as const }])),
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  return { values: values as Partial<Record<keyof typeof FLAGS, string>> & { help: boolean } };
}
