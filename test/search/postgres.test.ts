import { onPostgres } from '../helpers/postgres.js';
import { runSearchSuite } from './suite.js';

await onPostgres('test/search/postgres.test.ts', 'search', runSearchSuite);
