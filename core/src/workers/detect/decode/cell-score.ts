/** What to keep while decoding one image's raw output. */
export interface DecodeOptions {
  /** Model classes of interest (others are ignored). */
  classIds: readonly number[];
  /** Minimum score of a class without its own floor in `floors` (class score, × objectness for YOLOX). */
  scoreThreshold: number;
  /**
   * Model classes that are one kind of object (player, goalkeeper, referee: a person). Their
   * probabilities are merged into one score (see {@link scoreCell}); absent: every class stands alone.
   */
  personClassIds?: ReadonlySet<number>;
  /** Per model class id, the minimum score kept (e.g. the model card's floors); else `scoreThreshold`. */
  floors?: Readonly<Record<number, number>>;
}

/** The class and score one output cell (anchor) stands for. */
export interface CellScore {
  classId: number;
  score: number;
}

/**
 * The class and score of one output cell, or `undefined` when nothing in it reaches its floor.
 *
 * **Merged person score.** A cell's person probability is `1 − ∏(1 − p_c)` over the person classes
 * (noisy-OR: the chance that at least one role fires), its class the role with the highest `p_c`.
 * A person the model splits between roles (player 0.3, goalkeeper 0.3, referee 0.2 → 0.608) is
 * then not lost under a threshold that each role alone misses; for one dominant role it is ≈ that
 * role's score. Other classes (the ball) keep their own score. The cell is the person when the
 * merged score is at least the other best score, else that class; the result must reach its
 * class's floor (`floors[classId]`, else `scoreThreshold`).
 *
 * @param probabilityOf - class id → probability in [0, 1] (values outside are clamped).
 * @param objectness - multiplies every score (YOLOX); 1 for YOLOv8-style heads.
 */
export function scoreCell(
  probabilityOf: (classId: number) => number,
  options: DecodeOptions,
  objectness = 1,
): CellScore | undefined {
  const people = options.personClassIds;
  let notPerson = 1;
  let role = -1;
  let roleP = -1;
  let other = -1;
  let otherP = -1;
  for (const c of options.classIds) {
    const p = Math.min(1, Math.max(0, probabilityOf(c)));
    if (people?.has(c)) {
      notPerson *= 1 - p;
      if (p > roleP) {
        roleP = p;
        role = c;
      }
    } else if (p > otherP) {
      otherP = p;
      other = c;
    }
  }
  const personScore = role >= 0 ? objectness * (1 - notPerson) : -1;
  const otherScore = other >= 0 ? objectness * otherP : -1;
  const [classId, score] = personScore >= otherScore ? [role, personScore] : [other, otherScore];
  if (classId < 0 || score < (options.floors?.[classId] ?? options.scoreThreshold)) return undefined;
  return { classId, score };
}

/** The lowest floor of `options` over its classes: a cell whose every score is below it holds nothing. */
export function lowestFloor(options: DecodeOptions): number {
  return Math.min(...options.classIds.map((c) => options.floors?.[c] ?? options.scoreThreshold));
}
