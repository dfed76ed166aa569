import { onPostgres } from '../helpers/postgres.js';
import { runSandboxSuite } from './sandbox-suite.js';

await onPostgres('test/worker/sandbox-postgres.test.ts', 'sandbox', runSandboxSuite);
