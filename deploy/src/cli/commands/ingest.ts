import { parseArgs } from 'node:util';
import {
  createDatabase,
  createEdgeToken,
  listEdgeTokens,
  loadIngestSettings,
  migrate,
  revokeEdgeToken,
  startIngest,
} from '@polyvision/core';
import { ConfigError, createLogger, PolyvisionError } from '@polyvision/shared';
import { listenForStop, parseCommandLine } from '../command-kit.ts';

const HELP = `Usage:
  pnpm polyvision ingest [--port N] [--instance-id ID]
  pnpm polyvision ingest token create --organization ORG [--edge EDGE_ID] [--json]
  pnpm polyvision ingest token list [--organization ORG] [--json]
  pnpm polyvision ingest token revoke TOKEN_ID

Without a subcommand: runs one ingest replica — tus 1.0.0 uploads at
/api/v1/uploads streamed to storage elements, the capacity monitor (one
elected leader polls the SEs), /health/live, /health/ready, /metrics.
Configured by the environment (core/README.md, "Ingest"): REDIS_URL
(required), DATABASE_URL (PGlite in memory when unset), STORAGE_ELEMENTS or
STORAGE_ELEMENTS_FILE, INGEST_*, CAPACITY_MONITOR_*. Prints one JSON line
{"event":"listening","url":...,"instance_id":...} on stdout when ready;
SIGTERM/SIGINT close it gracefully (leadership released).

token create   prints a new edge bearer token for ORG (only its SHA-256 is
               stored; the token is shown once)
token list     token ids, organizations, edges, creation and revocation times
token revoke   revokes a token by id (effective within 10 s on running replicas)

The token commands need DATABASE_URL (and DATABASE_SCHEMA if not public).
Exit status: 0 ok, 1 failure, 2 usage or configuration error.
`;

/** `polyvision ingest [token create|list|revoke]`. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('ingest', HELP, () => parse(argv));
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  try {
    if (positionals[0] === 'token') return await token(positionals.slice(1), values);
    if (positionals.length > 0) {
      process.stderr.write(`ingest: unknown subcommand "${positionals.join(' ')}"\n\n${HELP}`);
      return 2;
    }
    return await serveReplica(values);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      return 2;
    }
    if (error instanceof PolyvisionError && error.httpStatus === 400) {
      process.stderr.write(`ingest: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`ingest: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      port: { type: 'string' },
      'instance-id': { type: 'string' },
      organization: { type: 'string' },
      edge: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

async function serveReplica(values: Values): Promise<number> {
  const env = { ...process.env };
  if (values.port !== undefined) env.INGEST_PORT = values.port;
  if (values['instance-id'] !== undefined) env.INGEST_INSTANCE_ID = values['instance-id'];
  const settings = loadIngestSettings(env);
  const logger = createLogger('ingest', { instance_id: settings.instanceId });
  const stopping = listenForStop(env, logger);
  if (typeof stopping === 'number') return stopping;
  const ingest = await startIngest(settings, logger);
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: ingest.url, instance_id: settings.instanceId })}\n`,
  );
  const stop = await stopping;
  logger.info({ signal: stop.signal }, 'ingest stopping');
  stop.step('release leadership, finish requests, close connections');
  await ingest.close();
  stop.closed();
  return 0;
}

async function token(args: string[], values: Values): Promise<number> {
  const [action, ...rest] = args;
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError('DATABASE_URL', 'got nothing, expected the postgres:// URL of the catalog');
  const db = createDatabase({ databaseUrl, schema: process.env.DATABASE_SCHEMA || 'public' });
  try {
    await migrate(db);
    if (action === 'create' && rest.length === 0) {
      if (!values.organization) {
        process.stderr.write('ingest token create: --organization is required\n');
        return 2;
      }
      const created = await createEdgeToken(db, values.organization, values.edge);
      process.stdout.write(
        values.json
          ? `${JSON.stringify({ ...created, organization_id: values.organization, edge_id: values.edge ?? null })}\n`
          : `${created.token}\n`,
      );
      if (!values.json)
        process.stderr.write(`token id ${created.token_id}; store the token now, it is not shown again\n`);
      return 0;
    }
    if (action === 'list' && rest.length === 0) {
      const rows = await listEdgeTokens(db, values.organization);
      if (values.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
      else {
        for (const r of rows) {
          process.stdout.write(
            `${r.token_id}\t${r.organization_id}\t${r.edge_id ?? '-'}\t${r.created_at}\t${r.revoked_at ? `revoked ${r.revoked_at}` : 'active'}\n`,
          );
        }
      }
      return 0;
    }
    if (action === 'revoke' && rest.length === 1) {
      const revoked = await revokeEdgeToken(db, rest[0] as string);
      if (!revoked) {
        process.stderr.write(`ingest token revoke: no active token with id ${rest[0]}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${rest[0]}\n`);
      return 0;
    }
    process.stderr.write(`ingest token: expected create|list|revoke TOKEN_ID\n\n${HELP}`);
    return 2;
  } finally {
    await db.close();
  }
}
