/**
 * What the deploy tests share. The Prometheus binaries they run come from
 * Debian's `prometheus` package (deploy/ci-install.sh): a missing one fails
 * the file on CI and skips its tests elsewhere (test/helpers/system-tools.ts).
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

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
