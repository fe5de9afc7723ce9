#!/usr/bin/env node
/**
 * The `polyvision` command line: one entry point for every service and tool.
 * Each command lives in its own module under `commands/` and is loaded only
 * when it runs, so `--help` stays fast and a broken optional dependency of one
 * command cannot break the others.
 */
import { commands } from './commands.ts';

function printHelp(): void {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  process.stdout.write(
    `Usage: pnpm polyvision <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun 'pnpm polyvision <command> --help' for a command's options.\n`,
  );
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    printHelp();
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`polyvision: unknown command '${name}'\n\n`);
    printHelp();
    return 2;
  }
  const module = await command.load();
  return module.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const e = error as { code?: string; message?: string };
    process.stderr.write(`polyvision: ${e.code ? `[${e.code}] ` : ''}${e.message ?? String(error)}\n`);
    if (process.env.POLYVISION_DEBUG) console.error(error);
    process.exitCode = 1;
  },
);
