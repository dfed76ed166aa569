/**
 * Runs the CLI two ways: in-process through run(argv, io) (fast: most
 * assertions), and as a real child process through tsx (exit codes, signals).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { run } from '../../src/cli/run.js';
import type { CliIo } from '../../src/cli/io.js';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const FIXTURES = join(import.meta.dirname, 'fixtures');
const MAIN = join(REPO_ROOT, 'src', 'cli', 'main.ts');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document --json promises. */
  json<T = Record<string, unknown>>(): T;
}

export interface CliEnv {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Resolves when the worker command should stop (its SIGTERM in-process). */
  stop?: Promise<string>;
}

export async function cli(argv: readonly string[], options: CliEnv = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: new Writable({ write: (chunk, _encoding, done) => void ((stderr += String(chunk)), done()) }),
    env: options.env ?? {},
    cwd: options.cwd ?? REPO_ROOT,
    waitForStopSignal: () => options.stop ?? new Promise(() => undefined),
  };
  const code = await run(argv, io);
  return result(code, stdout, stderr);
}

function result(code: number, stdout: string, stderr: string): CliResult {
  return {
    code,
    stdout,
    stderr,
    json<T>() {
      try {
        return JSON.parse(stdout) as T;
      } catch {
        throw new Error(`stdout is not one JSON document (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
      }
    },
  };
}

const children = new Set<ChildProcess>();
afterEach(() => {
  // A test that failed half-way must not leave a worker process behind.
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

export interface SpawnedCli {
  child: ChildProcess;
  /** Everything written so far. */
  output(): { stdout: string; stderr: string };
  exited: Promise<CliResult>;
}

/** The real `tasklease` process (node --import tsx src/cli/main.ts). */
export function spawnCli(argv: readonly string[], options: { env?: Record<string, string | undefined> } = {}): SpawnedCli {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...argv], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve(result(code ?? (signal ? 128 : -1), stdout, stderr));
    }),
  );
  return { child, output: () => ({ stdout, stderr }), exited };
}
