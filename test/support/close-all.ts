/**
 * Runs every closing step in order, even after one failed, so that one stuck
 * part does not leave the others running (a test world's `close()`).
 *
 * @throws the one failure, or an `AggregateError` of all of them (`message`
 *   says what was closing).
 */
export async function closeAll(steps: ReadonlyArray<() => Promise<unknown>>, message = 'closing'): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, message);
}
