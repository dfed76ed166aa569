/**
 * The README's main command as a newcomer runs it: `npm start` (here its
 * script, node --import tsx examples/start.ts) on a fresh SQLite file prints a
 * working URL and admin token, serves the example tasks, and Ctrl-C (SIGINT)
 * ends it gracefully within seconds.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints a URL and an admin token that work, runs the example tasks, and stops on Ctrl-C', async () => {
    const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    expect(script).toBe('node --import tsx examples/start.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
      cwd: ROOT,
      env: { ...process.env, TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'tasks.db')}`, TASKLEASE_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const [, url, token] = await waitFor(() => /running at (http:\/\/\S+)[\s\S]*?(tl_\S+)/.exec(out), 'the URL and the token', 60_000);
      const headers = { authorization: `Bearer ${token}` };
      const listed = (await (await fetch(`${url}/api/v1/tasks?limit=10`, { headers })).json()) as { tasks: { taskType: string }[] };
      expect(listed.tasks.map((t) => t.taskType).sort()).toEqual(['email.send', 'patients.import', 'reminder.send', 'video.transcode']);
      expect((await fetch(`${url}/api/v1/tasks`)).status).toBe(401);
      expect((await fetch(`${url}/docs`)).status).toBe(200);
      // The dashboard's URL is printed and serves (dist/ui: npm start's prestart builds it, the tests' globalSetup here).
      expect(out).toContain(`dashboard:  ${url}/ui/`);
      expect((await fetch(`${url}/ui/`)).status).toBe(200);
      await waitFor(
        async () => {
          const running = (await (await fetch(`${url}/api/v1/tasks?status=RUNNING`, { headers })).json()) as { tasks: unknown[] };
          return running.tasks.length > 0;
        },
        'the worker to run an example task',
        30_000,
      );
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
