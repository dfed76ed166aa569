/**
 * The deployment files say what the seed says: the three probes at its paths
 * and timings, a secret for the database URL, a non-root multi-stage image,
 * and a Prometheus configuration that Prometheus's own checker accepts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeWithTools, PROMTOOL, systemTool } from '../helpers/system-tools.js';
import { DEPLOY_DIR, runTool } from './tools.js';

const read = (path: string): string => readFileSync(join(DEPLOY_DIR, path), 'utf8');

/** The seed's probes (article 2, Kubernetes 健康探针). */
const SEED_PROBES = {
  livenessProbe: { path: '/actuator/health/liveness', initialDelaySeconds: 30, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 },
  readinessProbe: { path: '/actuator/health/readiness', initialDelaySeconds: 10, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 2 },
  startupProbe: { path: '/actuator/health/startup', initialDelaySeconds: 0, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 30 },
};

/** The lines of one probe block: from its key to the next line indented no deeper. */
function probeBlock(yaml: string, probe: string): Record<string, string | number> {
  const lines = yaml.split('\n');
  const start = lines.findIndex((line) => line.trim().startsWith(`${probe}:`));
  if (start < 0) throw new Error(`${probe} not found`);
  const indent = lines[start]!.search(/\S/);
  const block: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() !== '' && line.search(/\S/) <= indent) break;
    block.push(line);
  }
  const text = block.join('\n');
  const number = (key: string): number => Number(new RegExp(`${key}: (\\d+)`).exec(text)?.[1]);
  return {
    path: /path: (\S+),/.exec(text)?.[1] ?? '',
    port: number('port'),
    initialDelaySeconds: number('initialDelaySeconds'),
    periodSeconds: number('periodSeconds'),
    timeoutSeconds: number('timeoutSeconds'),
    failureThreshold: number('failureThreshold'),
  };
}

describe('deployment files', () => {
  it("Kubernetes: the seed's probes, the database URL from a Secret, a Service", () => {
    const yaml = read('kubernetes/tasklease.yaml');
    for (const [probe, seed] of Object.entries(SEED_PROBES)) expect(probeBlock(yaml, probe), probe).toEqual({ ...seed, port: 8080 });
    expect(yaml).toMatch(/kind: Secret[\s\S]*TASKLEASE_DATABASE_URL:/);
    expect(yaml).toMatch(/secretRef: \{ name: tasklease-database \}/);
    expect(yaml).toMatch(/kind: Service\n/);
    expect(yaml).toMatch(/runAsNonRoot: true/);
  });

  it('Dockerfile: multi-stage, runs `start` as the unprivileged node user', () => {
    const dockerfile = read('Dockerfile');
    const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => m[2]);
    expect(stages).toEqual(['build', 'runtime']);
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).not.toMatch(/npm ci|apt-get/); // no build tools in the final image
    expect(runtime).toMatch(/ENTRYPOINT \["node", "dist\/src\/cli\/main.js"\]\nCMD \["start"\]/);
  });

  it("systemd: runs `start` as its own user with a stop timeout above the worker's shutdown grace", () => {
    const unit = read('systemd/tasklease.service');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node dist\/src\/cli\/main.js start$/m);
    expect(unit).toMatch(/^User=tasklease$/m);
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).toBeGreaterThan(30 + 5); // shutdownGraceMs + shutdownAbortWaitMs
  });
});

const promtool = systemTool(PROMTOOL, 'test/deploy/manifests.test.ts');

describeWithTools([promtool], 'promtool', 'the example Prometheus configuration', () => {
  it('passes promtool check config', () => {
    const { status, output } = runTool(promtool!, ['check', 'config', 'prometheus/prometheus.example.yml']);
    expect(output).toContain('SUCCESS: 7 rules found');
    expect(status).toBe(0);
  }, 60_000);
});
