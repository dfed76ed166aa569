/**
 * The alert rules checked by Prometheus's own tool: they parse, and their
 * unit tests (deploy/prometheus/tasklease-alerts.test.yml) fire each alert on
 * synthetic unhealthy series and keep it silent on healthy ones. A rules file
 * whose alerts never fire must fail those tests, alert by alert.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeWithTools, PROMTOOL, systemTool } from '../helpers/system-tools.js';
import { ALERT_NAMES, ALERT_RULES, ALERT_TESTS, DASHBOARD, dashboardQueries, runTool } from './tools.js';

const found = systemTool(PROMTOOL, 'test/deploy/promtool.test.ts');

describeWithTools([found], 'promtool', 'promtool', () => {
  const promtool = found!;

  it('checks the rules file: the seven alerts, nothing else', () => {
    const { status, output } = runTool(promtool, ['check', 'rules', ALERT_RULES]);
    expect(output).toContain('SUCCESS: 7 rules found');
    expect(status).toBe(0);
    const names = [...readFileSync(ALERT_RULES, 'utf8').matchAll(/^\s+- alert: (\S+)$/gm)].map((m) => m[1]);
    expect(names).toEqual(ALERT_NAMES);
  }, 60_000);

  it('passes the unit tests, which hold a firing and a silent case for every alert', () => {
    const { status, output } = runTool(promtool, ['test', 'rules', ALERT_TESTS]);
    expect(output).toContain('SUCCESS');
    expect(status).toBe(0);
    const tests = readFileSync(ALERT_TESTS, 'utf8');
    for (const name of ALERT_NAMES) {
      const cases = [...tests.matchAll(new RegExp(`alertname: ${name}\\n\\s+exp_alerts:( \\[\\])?`, 'g'))];
      expect(
        cases.some((c) => c[1] === undefined),
        `${name} has a firing case`,
      ).toBe(true);
      expect(
        cases.some((c) => c[1] !== undefined),
        `${name} has a silent case`,
      ).toBe(true);
    }
  }, 60_000);

  it('fails the unit tests of every alert when the rules never fire', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-promtool-'));
    try {
      // Each alert's threshold (the comparison ending an expression line, comments aside) made unreachable.
      const rules = readFileSync(ALERT_RULES, 'utf8').replace(
        /^(?!\s*#)(.*?)([<>]) [\d.]+$/gm,
        (_line, head: string, op: string) => `${head}${op} ${op === '>' ? '+Inf' : '-Inf'}`,
      );
      expect(rules).not.toEqual(readFileSync(ALERT_RULES, 'utf8'));
      writeFileSync(join(dir, 'tasklease-alerts.yml'), rules);
      copyFileSync(ALERT_TESTS, join(dir, 'tasklease-alerts.test.yml'));
      const { status, output } = runTool(promtool, ['test', 'rules', 'tasklease-alerts.test.yml'], dir);
      expect(status).not.toBe(0);
      for (const name of ALERT_NAMES) expect(output, `${name}'s firing test`).toContain(`alertname: ${name},`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('parses every dashboard query', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-promtool-'));
    try {
      const queries = dashboardQueries(readFileSync(DASHBOARD, 'utf8'));
      expect(queries.length).toBeGreaterThanOrEqual(8); // the seed's eight panels, and more
      // promtool parses PromQL in rule files: one recording rule per query.
      const rules = [
        'groups:',
        '  - name: dashboard',
        '    rules:',
        ...queries.flatMap((q, i) => [`      - record: dashboard_query_${i}`, `        expr: ${JSON.stringify(q.expr)}`]),
      ];
      writeFileSync(join(dir, 'dashboard.yml'), `${rules.join('\n')}\n`);
      const { status, output } = runTool(promtool, ['check', 'rules', join(dir, 'dashboard.yml')]);
      expect(output).toContain(`SUCCESS: ${queries.length} rules found`);
      expect(status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
