/**
 * The HTTP load generator, in a process of its own (forked by http-load.ts):
 * each `run` message is one autocannon run, answered with its figures, so the
 * servers under test never share an event loop or a core's time slice with the
 * client that loads them.
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  durationS: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

export type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'exit' };

process.on('message', (message: LoadMessage) => {
  if (message.type === 'exit') process.exit(0);
  void run(message.spec).then(
    (result) => process.send!({ type: 'result', result }),
    (error: unknown) => process.send!({ type: 'error', message: error instanceof Error ? error.message : String(error) }),
  );
});
process.send!({ type: 'ready' });

async function run(spec: LoadSpec): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    ...(spec.body === undefined ? {} : { body: spec.body }),
    connections: spec.connections,
    duration: spec.durationS,
  });
  return {
    rps: result.requests.total / spec.durationS,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}
