import { randomBytes } from 'node:crypto';

/**
 * A new KRaft cluster id: 16 random bytes in URL-safe base64 without padding
 * (22 characters), the form of `org.apache.kafka.common.Uuid`.
 *
 * Like `Uuid.randomUuid()` it draws again while the text starts with `-`:
 * Kafka's command-line tools (argparse4j) read such an id as an option, so
 * `kafka-storage format -t -Ab…` fails with "expected one argument" (1 draw in
 * 64 did, and failed a CI run).
 *
 * @param random source of random bytes (tests pass a scripted one); default `crypto.randomBytes`.
 * @returns a 22-character id that does not start with `-`.
 */
export function newKafkaClusterId(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}
