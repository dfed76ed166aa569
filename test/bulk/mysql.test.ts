import { onMysql } from '../helpers/mysql.js';
import { runBulkSuite } from './suite.js';

await onMysql('test/bulk/mysql.test.ts', 'bulk', runBulkSuite);
