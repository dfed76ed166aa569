/**
 * The README's main command as a newcomer runs it: `npm start` (here its
 * script, node --import tsx examples/start.ts) on a fresh SQLite file prints a
 * working URL, the database and an admin token, serves the example tasks,
 * and Ctrl-C (SIGINT) ends it gracefully within seconds, saying what it did;
 * on a port in use it prints one line saying how to choose another.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
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
      env: {
        ...process.env,
        TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'tasks.db')}`,
        TASKLEASE_PORT: '0',
        TASKLEASE_EXAMPLE_PAYLOAD_KEYS: `t1:${Buffer.alloc(32, 3).toString('base64')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const [, url, token] = await waitFor(() => /running at (http:\/\/\S+)[\s\S]*?(tl_\S+)/.exec(out), 'the URL and the token', 60_000);
      const headers = { authorization: `Bearer ${token}` };
      const listed = (await (await fetch(`${url}/api/v1/tasks?limit=10`, { headers })).json()) as { tasks: { taskType: string; payload: unknown }[] };
      expect(listed.tasks.map((t) => t.taskType).sort()).toEqual([
        'email.send',
        'patient.record.import',
        'patients.import',
        'reminder.send',
        'video.transcode',
      ]);
      // The medical record is sealed at rest with the key given (its id t1); the API shows it as stored.
      expect(listed.tasks.find((t) => t.taskType === 'patient.record.import')!.payload).toMatchObject({ $encrypted: 'aes-256-gcm', kid: 't1' });
      expect(JSON.stringify(listed)).not.toContain('Jane Roe');
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
      expect(out).toContain(`database:   sqlite:${join(dir, 'tasks.db')}`);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      // Ctrl-C says what it did: the long transcode was running and goes back to the queue.
      expect(out).toMatch(/stopping: no new tasks; \d+ running tasks? may finish, \d+ waiting tasks? go back to the queue/);
      expect(out).toMatch(/stopped: \d+ tasks? finished while stopping, [1-9]\d* tasks? handed back to the queue/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('on a port in use, prints one line naming the port and how to choose another, and exits 1', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
        cwd: ROOT,
        env: { ...process.env, TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'busy.db')}`, TASKLEASE_PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));
      expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
      expect(stderr).toBe(
        `tasklease: port ${port} on 127.0.0.1 is already in use by another program; start on another port: npm start -- --port ${port + 1} (or TASKLEASE_PORT=${port + 1})\n`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
