import {
  ConfigError,
  type ShutdownDeadlineLogger,
  type StopSignal,
  shutdownDeadlineMs,
  untilStopSignal,
} from '@polyvision/shared';

/**
 * What the CLI commands share: argument parsing with the usage exit, the
 * configuration exit, the stop signal with its shutdown deadline, and hiding the one kafkajs
 * warning. Exit statuses follow the commands' help texts: 0 ok (and --help),
 * 2 usage or configuration error.
 */

/** The exit status of a usage or configuration error. */
export const USAGE_EXIT = 2;

/**
 * Runs `parse` (usually node:util `parseArgs`). A parse error prints
 * `<name>: <message>` and the help text on stderr; `--help` prints the help
 * text on stdout. Either way the exit status comes back as a number
 * (2 or 0) instead of the parsed result.
 *
 * @param name - the command name, prefixing the error line.
 * @param help - the command's help text.
 * @param parse - the parser; its result's `values.help` is the --help flag.
 */
export function parseCommandLine<T extends { values: { help?: boolean | undefined } }>(
  name: string,
  help: string,
  parse: () => T,
): T | number {
  let parsed: T;
  try {
    parsed = parse();
  } catch (error) {
    process.stderr.write(`${name}: ${(error as Error).message}\n\n${help}`);
    return USAGE_EXIT;
  }
  if (parsed.values.help) {
    process.stdout.write(help);
    return 0;
  }
  return parsed;
}

/**
 * Calls a configuration loader; a {@link ConfigError} prints
 * `configuration error: <message>` on stderr and comes back as exit status 2.
 *
 * @throws whatever else the loader throws.
 */
export function loadCommandConfig<T>(load: () => T): T | typeof USAGE_EXIT {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      return USAGE_EXIT;
    }
    throw error;
  }
}

/**
 * Starts listening for SIGTERM/SIGINT (`untilStopSignal`) with the deadline
 * of `SHUTDOWN_DEADLINE_MS` from `env`. Call it before the service starts:
 * a bad value is a configuration exit (2) before anything is open, and a
 * signal during the start is not lost.
 */
export function listenForStop(
  env: Record<string, string | undefined>,
  logger: ShutdownDeadlineLogger,
): Promise<StopSignal> | typeof USAGE_EXIT {
  const deadline = loadCommandConfig(() => ({ ms: shutdownDeadlineMs(env) }));
  if (typeof deadline === 'number') return deadline;
  return untilStopSignal({ deadlineMs: deadline.ms, logger });
}

/**
 * kafkajs 2.2.4 schedules a negative timeout on Node ≥ 23, which prints a
 * harmless TimeoutNegativeWarning (on every `services status`, and through
 * `services up`); short-lived commands hide that one warning and print the
 * others as Node would.
 */
export function hideKafkajsTimeoutWarning(): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name !== 'TimeoutNegativeWarning') process.stderr.write(`${warning.name}: ${warning.message}\n`);
  });
}

/** The actions of the `services` and `cluster` commands. */
export type LifecycleAction = 'up' | 'down' | 'status';

/**
 * The one positional of an `up|down|status` command. None prints the help
 * text on stdout, anything else prints `<name>: expected one of up, down,
 * status; got …` and the help text on stderr; both come back as exit status 2.
 */
export function lifecycleAction(name: string, help: string, positionals: readonly string[]): LifecycleAction | number {
  const action = positionals[0];
  if (action === undefined) {
    process.stdout.write(help);
    return USAGE_EXIT;
  }
  if (positionals.length > 1 || (action !== 'up' && action !== 'down' && action !== 'status')) {
    process.stderr.write(`${name}: expected one of up, down, status; got ${positionals.join(' ')}\n\n${help}`);
    return USAGE_EXIT;
  }
  return action;
}
