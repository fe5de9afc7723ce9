import { readFile, rename, writeFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';

/**
 * Renders a config template: every `${NAME}` is replaced by `values.NAME`.
 * Writes the result to `target` (through a temp file and rename, so a reader
 * never sees half a file).
 *
 * @throws PolyvisionError `services_template_invalid` when the template names a
 *   value that was not given.
 */
export async function renderTemplate(
  source: string,
  target: string,
  values: Record<string, string | number>,
): Promise<void> {
  const text = await readFile(source, 'utf8');
  const rendered = text.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) {
      throw new PolyvisionError('services_template_invalid', `${source} uses \${${name}}, which has no value`);
    }
    return String(value);
  });
  const temp = `${target}.tmp-${process.pid}`;
  await writeFile(temp, rendered);
  await rename(temp, target);
}
