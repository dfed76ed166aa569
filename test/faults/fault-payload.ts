/**
 * The schema of the fault handler's payload (fault-child.ts), for the task
 * types a case declares strict: the worker checks it at run time, a client
 * that knows it checks it at submit (the malformed-payload case, FAULTS.md 19).
 */
import { z } from 'zod';

export const FAULT_PAYLOAD_SCHEMA = z
  .object({
    mode: z.enum(['sleep', 'hold', 'busy', 'exit', 'throw', 'pool']).optional(),
    ms: z.number().int().nonnegative().optional(),
    completeAnyway: z.boolean().optional(),
    onlyAttempt: z.number().int().positive().optional(),
  })
  .strict();
