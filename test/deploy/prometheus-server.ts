/**
 * A real Prometheus for one test file: its own config, its own TSDB in a
 * temporary directory, its own port on 127.0.0.1, a 1 s scrape interval.
 * Stopped by its PID (never by name); no system service is involved.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../helpers/wait.js';

export interface QueryResult {
  status: 'success' | 'error';
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

export interface RunningPrometheus {
  readonly url: string;
  readonly pid: number;
  /** An instant query through the HTTP API. */
  query(expr: string): Promise<QueryResult>;
  /** GET an API path (e.g. /api/v1/rules), parsed. */
  api<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPrometheus(options: { binary: string; target: string; ruleFiles: string[] }): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      ...options.ruleFiles.map((file) => `  - ${JSON.stringify(file)}`),
      'scrape_configs:',
      '  - job_name: tasklease',
      '    static_configs:',
      `      - targets: [${JSON.stringify(options.target)}]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    options.binary,
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => void (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}:\n${log}`);
        return (await fetch(`${url}/-/ready`).catch(() => null))?.ok;
      },
      `prometheus at ${url} to be ready`,
      60_000,
      100,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const api = async <T>(path: string): Promise<T> => (await (await fetch(`${url}${path}`)).json()) as T;
  return {
    url,
    pid: child.pid!,
    api,
    stop,
    query: (expr) => api<QueryResult>(`/api/v1/query?query=${encodeURIComponent(expr)}`),
  };
}
