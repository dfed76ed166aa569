/**
 * The commands that come with the HTTP server, in-process on SQLite: token
 * create / list / revoke, and `start` serving the API with a worker for a
 * task module until its stop signal.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/run.js';
import { waitFor } from '../helpers/wait.js';
import { cli, FIXTURES } from './harness.js';

describe('tasklease start, serve and token', () => {
  let dir: string;
  let env: Record<string, string>;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-serve-'));
    env = { TASKLEASE_DATABASE_URL: `sqlite:${join(dir, 'tasks.db')}` };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs a long-lived command in-process; resolves its stdout as it grows, and stops it on demand. */
  function background(argv: string[], extraEnv: Record<string, string> = {}) {
    let stdout = '';
    let stderr = '';
    let stop!: (signal: string) => void;
    const stopped = new Promise<string>((resolve) => (stop = resolve));
    const io: CliIo = {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: new Writable({ write: (chunk, _encoding, done) => void ((stderr += String(chunk)), done()) }),
      env: { ...env, ...extraEnv },
      cwd: dir,
      waitForStopSignal: () => stopped,
    };
    const exited = run(argv, io);
    return { exited, stop: () => stop('SIGTERM'), output: () => ({ stdout, stderr }) };
  }

  it('start migrates, serves the API with a worker for the module, prints an admin token, and stops on its signal', async () => {
    const server = background(['start', join(FIXTURES, 'tasks.ts'), '--port', '0', '--print-admin-token', '--json']);
    const started = await waitFor(
      () => {
        const { stdout } = server.output();
        return stdout.includes('}') ? (JSON.parse(stdout) as { url: string; adminToken: string; worker: boolean }) : null;
      },
      'the server to print its URL',
      30_000,
    );
    expect(started.worker).toBe(true);
    const headers = { authorization: `Bearer ${started.adminToken}`, 'content-type': 'application/json' };
    expect((await fetch(`${started.url}/actuator/health/liveness`)).status).toBe(200);
    const submitted = await fetch(`${started.url}/api/v1/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'cli.echo', payload: { value: 7 } }),
    });
    expect(submitted.status).toBe(202);
    const { task } = (await submitted.json()) as { task: { id: string } };
    const done = await waitFor(async () => {
      const answer = (await (await fetch(`${started.url}/api/v1/tasks/${task.id}`, { headers })).json()) as { status: string; result: unknown };
      return answer.status === 'SUCCESS' ? answer : null;
    }, 'the in-process worker to run the task');
    expect(done.result).toEqual({ echoed: { value: 7 } });
    // A revoked token is refused at once by the server that stores it.
    const created = await cli(['token', 'create', '--name', 'ci', '--role', 'operator', '--json'], { env, cwd: dir });
    const { token, record } = created.json<{ token: string; record: { id: string } }>();
    expect((await fetch(`${started.url}/api/v1/tasks`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await cli(['token', 'revoke', record.id], { env, cwd: dir })).code).toBe(0);
    await waitFor(
      async () => (await fetch(`${started.url}/api/v1/tasks`, { headers: { authorization: `Bearer ${token}` } })).status === 401,
      'the revoked token to be refused',
    );
    server.stop();
    expect(await server.exited).toBe(0);
    expect(server.output().stderr).toMatch(/^stopping: no new tasks; 0 running tasks may finish, 0 waiting tasks go back to the queue/m);
    expect(server.output().stderr).toMatch(/^stopped: 0 tasks finished while stopping, 0 tasks handed back to the queue/m);
  });

  it('start on a port in use fails with PORT_IN_USE, naming the port and how to choose another', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const result = await cli(['start', '--port', String(port)], { env, cwd: dir });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `PORT_IN_USE: port ${port} on 127.0.0.1 is already in use by another program; start on another port: --port <port> or TASKLEASE_PORT=<port>`,
      );
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("serve takes the probes' detail level from --health-details or TASKLEASE_HEALTH_DETAILS, and refuses an unknown one", async () => {
    const liveness = async (extraEnv: Record<string, string>, flags: string[]) => {
      const server = background(['serve', '--port', '0', '--json', ...flags], extraEnv);
      const { url } = await waitFor(
        () => (server.output().stdout.includes('}') ? (JSON.parse(server.output().stdout) as { url: string }) : null),
        'the server to print its URL',
        30_000,
      );
      const body = (await (await fetch(`${url}/actuator/health/liveness`)).json()) as object;
      server.stop();
      expect(await server.exited).toBe(0);
      return Object.keys(body).sort();
    };
    expect(await liveness({}, [])).toEqual(['status']);
    expect(await liveness({ TASKLEASE_HEALTH_DETAILS: 'always', TASKLEASE_TRUST_PROXY: 'true' }, [])).toEqual(['details', 'status']);
    expect(await liveness({ TASKLEASE_HEALTH_DETAILS: 'always' }, ['--health-details', 'never'])).toEqual(['status']);
    const unknown = await cli(['serve', '--port', '0', '--health-details', 'sometimes'], { env, cwd: dir });
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/never, when-authorized, always/)]);
    const badEnv = await cli(['serve', '--port', '0'], { env: { ...env, TASKLEASE_HEALTH_DETAILS: 'sometimes' }, cwd: dir });
    expect([badEnv.code, badEnv.stderr]).toEqual([2, expect.stringMatching(/TASKLEASE_HEALTH_DETAILS/)]);
  });

  it('token create, list and revoke; a user token needs an owner', async () => {
    expect((await cli(['migrate'], { env, cwd: dir })).code).toBe(0);
    const created = await cli(['token', 'create', '--name', 'alice app', '--role', 'user', '--owner', 'alice', '--expires-in', '30d', '--json'], {
      env,
      cwd: dir,
    });
    expect(created.code, created.stderr).toBe(0);
    const { token, record } = created.json<{ token: string; record: { id: string; role: string; owner: string; expiresAt: string } }>();
    expect(token).toMatch(/^tl_/);
    expect(record).toMatchObject({ role: 'user', owner: 'alice', expiresAt: expect.any(String) });
    const listed = (await cli(['token', 'list', '--json'], { env, cwd: dir })).json<{ tokens: { id: string; revokedAt: string | null }[] }>();
    expect(listed.tokens).toEqual([expect.objectContaining({ id: record.id, revokedAt: null })]);
    expect(JSON.stringify(listed)).not.toContain(token);
    expect((await cli(['token', 'revoke', record.id], { env, cwd: dir })).code).toBe(0);
    const after = (await cli(['token', 'list', '--json'], { env, cwd: dir })).json<{ tokens: { revokedAt: string | null }[] }>();
    expect(after.tokens[0]!.revokedAt).not.toBeNull();
    const ownerless = await cli(['token', 'create', '--name', 'x', '--role', 'user'], { env, cwd: dir });
    expect(ownerless.code).toBe(2);
    expect(ownerless.stderr).toMatch(/owner/);
  });

  it('serve refuses a worker switch that is neither true nor false', async () => {
    const result = await cli(['serve', '--port', '0'], { env: { ...env, TASKLEASE_WORKER_ENABLED: 'maybe' }, cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/TASKLEASE_WORKER_ENABLED/);
  });
});
