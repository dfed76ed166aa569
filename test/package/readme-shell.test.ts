/**
 * The README's shell blocks as a newcomer runs them from a clone: the
 * command-line section through its alias (no build, no install), and the
 * curl examples against a running server — the id is captured, and the
 * pause finds a task still waiting (not one that already finished).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { defineTask } from '../../src/index.js';
import { startServer } from '../../src/server/index.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'tasklease-readme-shell-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a script in bash (aliases on, stop at the first failure) from the clone's root. */
async function bash(script: string, env: Record<string, string> = {}): Promise<string> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
  const { stdout } = await run('bash', ['-O', 'expand_aliases', '-e', '-o', 'pipefail', '-c', script], {
    cwd: root,
    env: { ...clean, ...env },
    timeout: 120_000,
  });
  return stdout;
}

it('the command-line section works from a clone as written, through its alias', async () => {
  const section = readme.slice(readme.indexOf('### Command line'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!.split('\n');
  const lineOf = (start: string): string => block.find((line) => line.startsWith(start))!.replace(/\s+#.*$/, '');
  const script = [lineOf('alias tasklease='), lineOf('tasklease migrate'), lineOf("tasklease submit mail.send '"), 'tasklease list --json'].join('\n');
  const out = await bash(script, { TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'cli.db')}` });
  expect(out).toContain('schema migrated');
  expect(JSON.parse(out.slice(out.lastIndexOf('\n{') + 1))).toMatchObject({ tasks: [{ taskType: 'mail.send', status: 'QUEUED' }] });
}, 120_000);

it('the curl examples capture the id and pause a task that is still waiting', async () => {
  const server = await startServer({
    databaseUrl: `sqlite:${join(dir, 'http.db')}`,
    migrate: true,
    port: 0,
    logger: false,
    tasks: [defineTask({ type: 'reminder.send', execute: () => undefined })],
    worker: { pollIntervalMs: 50 },
  });
  try {
    const { token } = await server.client.tokens.create({ name: 'readme', role: 'admin' });
    const block = /<!-- curl:start -->\s*```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const script = block
      .split('\n')
      .filter((line) => !line.startsWith('curl -N')) // the SSE stream never ends on its own
      .join('\n')
      .replace(/^TOKEN=.*$/m, `TOKEN=${token}`)
      .replaceAll('http://127.0.0.1:8080', server.url)
      .concat('\necho; echo "id=$ID"');
    const out = await bash(script);
    const id = /^id=(\S+)$/m.exec(out)![1]!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    // pause and resume both answer success: the task was still waiting for its time
    expect(out.split('{"success":true,"code":"OK","message":"OK","data":null}')).toHaveLength(3);
    expect(out).not.toContain('INVALID_TRANSITION');
    expect(await server.client.get(id)).toMatchObject({ status: 'QUEUED' });
  } finally {
    await server.close();
  }
}, 120_000);
