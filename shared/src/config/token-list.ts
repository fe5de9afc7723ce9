import { z } from 'zod';
import { ConfigError } from '../errors/index.ts';

/** A bearer token as configured: 16–512 printable ASCII characters, no space or comma. */
const TOKEN_PATTERN = /^[\x21-\x2b\x2d-\x7e]{16,512}$/;

function split(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

/** What is wrong with a token list, without quoting any token; null when nothing is. */
function problemOf(tokens: readonly string[]): string | null {
  for (const [i, token] of tokens.entries()) {
    if (!TOKEN_PATTERN.test(token)) {
      return `token #${i + 1} has ${token.length} characters; expected 16 to 512 printable ASCII characters without spaces or commas`;
    }
  }
  return null;
}

/**
 * Parses a comma-separated list of bearer tokens (`OPS_TOKENS`,
 * `METRICS_TOKENS`, …). Blank entries are dropped; an unset or blank
 * variable gives `[]`.
 *
 * @param variable - the variable's name (for the error).
 * @param raw - its value.
 * @throws ConfigError naming the variable and the entry's position and
 *   length — never the token itself — when an entry is not 16–512 printable
 *   ASCII characters without spaces or commas.
 */
export function parseTokenList(variable: string, raw: string | undefined): readonly string[] {
  const tokens = split(raw);
  const problem = problemOf(tokens);
  if (problem) throw new ConfigError(variable, problem);
  return Object.freeze(tokens);
}

/** Zod field for {@link parseTokenList} inside a `loadConfig` schema (its error never quotes a token). */
export function envTokenList() {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const tokens = split(raw);
      const problem = problemOf(tokens);
      if (problem) {
        ctx.addIssue({ code: 'custom', message: problem });
        return z.NEVER;
      }
      return Object.freeze(tokens) as readonly string[];
    });
}
