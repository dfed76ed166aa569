/**
 * The Prometheus binaries the deploy tests run for real. They come from
 * Debian's `prometheus` package (deploy/ci-install.sh); a missing one fails
 * the test with the line that installs it, never skips it.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export const DEPLOY_DIR = resolve(import.meta.dirname, '../../deploy');
export const ALERT_RULES = join(DEPLOY_DIR, 'prometheus/tasklease-alerts.yml');
export const ALERT_TESTS = join(DEPLOY_DIR, 'prometheus/tasklease-alerts.test.yml');
export const DASHBOARD = join(DEPLOY_DIR, 'grafana/tasklease-dashboard.json');

/** The seed's six alerts and its lease-health alert. */
export const ALERT_NAMES = [
  'HighTaskQueueWait',
  'TaskBacklogIncreasing',
  'HighTaskFailureRate',
  'DeadLetterQueueGrowing',
  'HighConcurrencySaturation',
  'DatabaseConnectionPoolExhausted',
  'LeaseRenewalSuccessRateLow',
];

/** The absolute path of `name` on PATH (Debian puts both in /usr/bin); throws how to install it. */
export function requireTool(name: 'promtool' | 'prometheus'): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(`${name} is not on PATH (${process.env.PATH}); install it with deploy/ci-install.sh (apt-get install -y prometheus)`);
}

export function runTool(tool: string, args: string[], cwd = DEPLOY_DIR): { status: number | null; output: string } {
  const result = spawnSync(tool, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Every PromQL expression of the Grafana dashboard, with its panel title. */
export function dashboardQueries(json: string): { panel: string; expr: string }[] {
  const dashboard = JSON.parse(json) as { panels: { title: string; targets: { expr: string }[] }[] };
  return dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ panel: panel.title, expr: target.expr })));
}
