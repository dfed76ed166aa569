/**
 * `npm start`: the product running. Migrates an embedded SQLite file
 * (./tasklease.db, or TASKLEASE_DATABASE_URL / --database-url for PostgreSQL
 * or MySQL), starts the HTTP server with a worker for the example tasks,
 * submits a few so there is something to see, and prints the URL, the docs
 * URL and a freshly created admin token (shown once).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { defineTask, parseKeys, payloadEncryption, TaskFailure, TaskResult } from '../src/index.js';
import { runFromCommandLine } from '../src/server/main.js';
import { ImportLedger, importTask } from './import-task.js';

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const onAbort = (): void => (clearTimeout(timer), reject(signal.reason));
    const timer = setTimeout(() => (signal.removeEventListener('abort', onAbort), resolve()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The seed's medical records, one patient record a task, sealed at rest (AES-256-GCM): the keys come from
 * TASKLEASE_EXAMPLE_PAYLOAD_KEYS (`k1:<base64>,…`), else from ./tasklease.example-key, made on the first start
 * (a development key: a real deployment keeps its keys in its secret store). Paste the key into the task page to
 * read a record.
 */
const KEY_FILE = 'tasklease.example-key';
function exampleKeys(): Record<string, string> {
  const given = process.env.TASKLEASE_EXAMPLE_PAYLOAD_KEYS;
  if (given) return parseKeys(given);
  if (!existsSync(KEY_FILE)) writeFileSync(KEY_FILE, `dev1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  return parseKeys(readFileSync(KEY_FILE, 'utf8'));
}

const tasks = [
  importTask(new ImportLedger()),
  defineTask<{ patient: string; insuranceNo: string; visitDate: string }>({
    type: 'patient.record.import',
    execute: (_ctx, record) => TaskResult.success({ result: { imported: `${record.insuranceNo}/${record.visitDate}` } }),
  }),
  defineTask({
    type: 'video.transcode',
    execute: async (ctx) => {
      for (let second = 0; second < 30; second++) {
        ctx.reportProgress({ total: 30, processed: second + 1 });
        await sleep(1000, ctx.signal);
      }
    },
  }),
  defineTask({
    type: 'email.send',
    maxAttempts: 2,
    execute: () => {
      throw new TaskFailure('mailbox does not exist', { code: 'MAILBOX_UNKNOWN' });
    },
  }),
  defineTask({ type: 'reminder.send', execute: () => ({ status: 'SUCCESS', result: { sent: true } }) }),
];

const server = await runFromCommandLine({
  tasks,
  middleware: [payloadEncryption({ keys: exampleKeys(), types: ['patient.record.import'] })],
  publicDocs: true,
  logger: { level: process.env.TASKLEASE_LOG_LEVEL ?? 'warn' },
  // A short shutdown grace: Ctrl-C hands the long transcode back within seconds instead of waiting for it.
  worker: {
    concurrency: 4,
    pollIntervalMs: 500,
    heartbeatIntervalMs: 2000,
    leaseMs: 20_000,
    recoveryIntervalMs: 5000,
    progressFlushIntervalMs: 500,
    retry: { baseDelayMs: 2000 },
    shutdownGraceMs: 2000,
    shutdownAbortWaitMs: 1000,
  },
});
await server.client.submitMany([
  {
    type: 'patients.import',
    payload: { fileName: 'patients-2026-11.csv', totalRows: 2000, batchSize: 100, batchDelayMs: 200 },
    owner: 'clinic-7',
    idempotencyKey: `start-${Date.now()}`,
  },
  { type: 'patient.record.import', payload: { patient: 'Jane Roe', insuranceNo: 'INS-4471', visitDate: '2026-11-03' }, owner: 'clinic-7' },
  { type: 'video.transcode', payload: {}, owner: 'clinic-7' },
  { type: 'email.send', payload: { to: 'nobody@example.invalid' } },
  { type: 'reminder.send', payload: {}, delayMs: 10_000 },
]);
const { token } = await server.client.tokens.create({ name: `npm start ${new Date().toISOString()}`, role: 'admin', expiresInMs: 7 * 86_400_000 });

console.log(`
tasklease is running at ${server.url}
  database:   ${server.database}
  dashboard:  ${server.url}/ui/   (log in with the token below)
  API docs:   ${server.url}/docs   (OpenAPI: ${server.url}/openapi.json)
  admin token (shown once, valid 7 days):
    ${token}

  encrypted records: patient.record.import payloads are sealed; their key is in ./${KEY_FILE}
    unless TASKLEASE_EXAMPLE_PAYLOAD_KEYS gives one (paste the part after "dev1:" into the task page)

  curl -H "Authorization: Bearer ${token}" ${server.url}/api/v1/tasks
  curl ${server.url}/actuator/health

Another port: npm start -- --port 8081 (or TASKLEASE_PORT=8081); another database: TASKLEASE_DATABASE_URL=postgres://…
Ctrl-C stops it gracefully.`);
