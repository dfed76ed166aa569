import { onPostgres } from '../helpers/postgres.js';
import { runFlowSuite } from './suite.js';

await onPostgres('test/flows/postgres.test.ts', 'flows', runFlowSuite);
