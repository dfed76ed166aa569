/**
 * Everything the CLI touches outside itself, in one object: a test runs the
 * whole command line in-process with its own streams, environment and
 * directory, and a real process passes its own.
 */
export interface CliIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  /** Messages, errors and progress bars: stdout stays one clean document under --json. */
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Resolves with the signal's name when the process is asked to stop (SIGINT, SIGTERM). */
  waitForStopSignal(): Promise<string>;
}

export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    waitForStopSignal: () =>
      new Promise((resolve) => {
        const onSignal = (signal: NodeJS.Signals): void => {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
          // A second signal while stopping means "now": leave at once, tasks come back by lease expiry.
          const force = (again: NodeJS.Signals): never => {
            process.stderr.write(`${again} again: exiting without waiting for running tasks\n`);
            process.exit(130);
          };
          process.once('SIGINT', force);
          process.once('SIGTERM', force);
          resolve(signal);
        };
        process.on('SIGINT', onSignal);
        process.on('SIGTERM', onSignal);
      }),
  };
}
