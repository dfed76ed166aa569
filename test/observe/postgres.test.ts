import { onPostgres } from '../helpers/postgres.js';
import { runObserveSuite } from './suite.js';

await onPostgres('test/observe/postgres.test.ts', 'observability', runObserveSuite);
