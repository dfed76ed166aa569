/**
 * `npm run demo` and Ctrl-C: whenever it comes — while the store is being
 * migrated, right after submitting, while tasks run — the demo stops
 * gracefully, prints its summary and exits 0. Ctrl-C is simulated as a
 * terminal sends it: SIGINT to the whole process group (npm, its shell and
 * the demo), so the demo also receives the copy npm forwards. npm itself
 * then ends by that signal, as npm does for any script, so the exit code is
 * asserted on the demo's own command (what `npm run demo` runs).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'tl-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface DemoRun {
  output: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs the demo, sends Ctrl-C once a line matches `when`, and resolves with everything it printed. */
function interruptDemo(command: string[], when: RegExp, trial: number): Promise<DemoRun> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: root,
    detached: true, // its own process group, as a terminal's foreground job
    env: { ...process.env, TASKLEASE_DEMO_DIR: join(dir, `run-${trial}`) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let sent = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    if (!sent && when.test(line)) {
      sent = true;
      process.kill(-child.pid!, 'SIGINT');
    }
  });
  child.stderr.on('data', (chunk: Buffer) => lines.push(`stderr: ${chunk.toString()}`));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode, signal) => resolve({ output: lines.join('\n'), exitCode, signal }));
  });
}

const DEMO = ['node', '--import', 'tsx', 'examples/demo.ts'];

describe('the demo on Ctrl-C', () => {
  const moments: [string, RegExp][] = [
    ['at its first line, before the store is migrated', /tasklease demo:/],
    ['right after submitting', /submitted 6 tasks/],
    ['while tasks run', /▶ .* started/],
    ['while the import reports progress', /patients\.import .* \d+\/2000/],
  ];
  moments.forEach(([moment, when], trial) => {
    it(`stops gracefully, prints the summary and exits 0 when interrupted ${moment}`, async () => {
      const run = await interruptDemo(DEMO, when, trial);
      expect(run.output).toContain('Ctrl-C: stopping gracefully');
      expect(run.output).toMatch(/Summary\ntype +status +attempts/);
      expect(run.output).toMatch(/dead letters: \d+/);
      expect({ exitCode: run.exitCode, signal: run.signal }).toEqual({ exitCode: 0, signal: null });
    });
  });

  it('prints durations rounded to whole milliseconds', async () => {
    const run = await interruptDemo(DEMO, /✔ .* in /, moments.length + 1);
    const done = run.output.split('\n').filter((line) => line.includes('✔'));
    expect(done.length).toBeGreaterThan(0);
    for (const line of done) expect(line).toMatch(/ in \d+ ms$/);
  });

  it('prints the summary under `npm run demo` too, where npm forwards a second SIGINT', async () => {
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.demo).toBe(DEMO.join(' '));
    const run = await interruptDemo(['npm', 'run', '--silent', 'demo'], /▶ .* started/, moments.length);
    expect(run.output).toContain('Ctrl-C: stopping gracefully');
    expect(run.output).toMatch(/Summary\ntype +status +attempts/);
    expect(run.output).toMatch(/imported rows: \d+/);
  });
});
