/**
 * What a stop did, in words for the terminal: `npm start` and `tasklease
 * start` / `serve` print these lines on Ctrl-C, so an operator sees that the
 * running tasks were given their grace and which went back to the queue.
 */
import type { Worker } from '../worker/worker.js';

const count = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Subscribes to the worker's stop; call the answer once the server has closed, for the closing line. */
export function reportStop(worker: Worker | null, write: (line: string) => void): () => void {
  if (!worker) return () => write('stopped (no worker ran here)');
  let finished = 0;
  let handedBack = 0;
  let stopping = false;
  const attemptEnded = (): void => void (stopping && (finished += 1));
  const offs = [
    worker.on('stopping', ({ active, buffered }) => {
      stopping = true;
      write(
        `stopping: no new tasks; ${count(active, 'running task')} may finish, ${count(buffered, 'waiting task')} go back to the queue (Ctrl-C again to force)`,
      );
    }),
    worker.on('completed', attemptEnded),
    worker.on('failed', attemptEnded),
    worker.on('cancelled', attemptEnded),
    worker.on('released', () => void (handedBack += 1)),
  ];
  return () => {
    for (const off of offs) off();
    write(`stopped: ${count(finished, 'task')} finished while stopping, ${count(handedBack, 'task')} handed back to the queue (the next worker runs them)`);
  };
}
