import { onPostgres } from '../helpers/postgres.js';
import { runControlSuite } from './suite.js';

await onPostgres('test/control/postgres.test.ts', 'control plane', runControlSuite);
