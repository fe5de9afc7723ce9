import { ConfigError } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import { createMessageBus, kafkaClientName } from '../../src/bus/create-bus.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import { PlatformaticBus } from '../../src/bus/platformatic/platformatic-bus.ts';

describe('createMessageBus and KAFKA_CLIENT', () => {
  it('drives Kafka with @platformatic/kafka by default, kafkajs when asked, memory without brokers', async () => {
    const buses = [
      createMessageBus('127.0.0.1:1', 'create-bus-test', undefined),
      createMessageBus('127.0.0.1:1', 'create-bus-test', ' kafkajs '),
      createMessageBus('', 'create-bus-test', 'kafkajs'),
    ];
    expect(buses[0]).toBeInstanceOf(PlatformaticBus);
    expect(buses[1]).toBeInstanceOf(KafkaBus);
    expect(buses[2]).toBeInstanceOf(MemoryBus);
    await Promise.all(buses.map((bus) => bus.close()));
  });

  it('refuses an unknown client, naming the variable and the choices', () => {
    expect(() => kafkaClientName('librdkafka')).toThrow(ConfigError);
    expect(() => createMessageBus('127.0.0.1:1', 'create-bus-test', 'librdkafka')).toThrow(
      /KAFKA_CLIENT: "librdkafka" is not a Kafka client; use one of platformatic, kafkajs/,
    );
    expect(kafkaClientName('')).toBe('platformatic');
  });
});
