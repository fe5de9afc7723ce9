import { Admin, ConfigResourceTypes } from '@platformatic/kafka';

/** True when `error` (or one it wraps) is the broker's INVALID_SESSION_TIMEOUT refusal of a JoinGroup. */
export function isInvalidSessionTimeout(error: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (e: unknown): boolean => {
    if (!e || typeof e !== 'object' || seen.has(e)) return false;
    seen.add(e);
    const { apiId, errors, cause } = e as { apiId?: unknown; errors?: unknown; cause?: unknown };
    if (apiId === 'INVALID_SESSION_TIMEOUT') return true;
    return (Array.isArray(errors) && errors.some(visit)) || visit(cause);
  };
  return visit(error);
}

/**
 * The broker's `group.min.session.timeout.ms` (milliseconds), read with
 * DescribeConfigs from the first broker of the cluster's metadata; `null`
 * when it cannot be read.
 */
export async function brokerMinSessionTimeoutMs(connection: {
  brokers: string[];
  clientId: string;
  connectTimeoutMs: number;
}): Promise<number | null> {
  const admin = new Admin({
    clientId: `${connection.clientId}-config`,
    bootstrapBrokers: connection.brokers,
    connectTimeout: connection.connectTimeoutMs,
    retries: 2,
  });
  try {
    const metadata = await admin.metadata({ topics: [] });
    const brokerId = [...metadata.brokers.keys()][0];
    if (brokerId === undefined) return null;
    const [described] = await admin.describeConfigs({
      resources: [
        {
          resourceType: ConfigResourceTypes.BROKER,
          resourceName: String(brokerId),
          configurationKeys: ['group.min.session.timeout.ms'],
        },
      ],
    });
    const value = described?.configs.find((c) => c.name === 'group.min.session.timeout.ms')?.value;
    return value ? Number(value) : null;
  } catch {
    return null;
  } finally {
    await admin.close().catch(() => {});
  }
}
