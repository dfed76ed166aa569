/**
 * A child program that talks in JSON lines: it prints {"event":"ready"} once
 * its store is open, waits for a line on stdin before acting, prints its
 * answers, and exits 0. Used by the uniqueness and waitFor process tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface LineChild<A> {
  child: ChildProcess;
  /** Resolves once the child said it is ready (or has exited). */
  ready: Promise<void>;
  /** Every line but "ready", once the child exited 0; rejects with its stderr otherwise. */
  exited: Promise<A[]>;
  /** Tells the child to act. */
  go(): void;
}

const children = new Set<ChildProcess>();

export function spawnLineChild<A, C extends { label: string } = { label: string }>(script: string, config: C): LineChild<A> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, TL_CHILD: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const answers: A[] = [];
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { event?: string };
    if (message.event === 'ready') markReady();
    else answers.push(message as A);
  });
  const exited = new Promise<A[]>((resolve, reject) =>
    child.on('exit', (code) => {
      children.delete(child);
      if (code === 0) resolve(answers);
      else reject(new Error(`child ${config.label} exited ${code}: ${stderr}`));
    }),
  );
  return { child, ready: Promise.race([ready, exited.then(() => undefined)]), exited, go: () => child.stdin!.end('go\n') };
}

/** For afterEach: kills (by pid) every child still running, so a failed test leaks no process. */
export function killLineChildren(): void {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  children.clear();
}

/** Child side: say ready, then wait for the parent's go. */
export async function readyThenGo(): Promise<void> {
  process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
}
