import { onPostgres } from '../helpers/postgres.js';
import { runWaitSuite } from './wait-suite.js';

await onPostgres('test/client/wait-postgres.test.ts', 'waitFor', runWaitSuite);
