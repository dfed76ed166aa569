import { onPostgres } from '../helpers/postgres.js';
import { runEncryptionSuite } from './suite.js';

await onPostgres('test/encryption/postgres.test.ts', 'encryption', runEncryptionSuite);
