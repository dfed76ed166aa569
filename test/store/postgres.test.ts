import { onPostgres } from '../helpers/postgres.js';
import { runStoreConformance } from './conformance.js';

await onPostgres('test/store/postgres.test.ts', 'Store conformance', runStoreConformance);
