import { onMysql } from '../helpers/mysql.js';
import { runEncryptionSuite } from './suite.js';

await onMysql('test/encryption/mysql.test.ts', 'encryption', runEncryptionSuite);
