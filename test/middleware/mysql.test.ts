import { onMysql } from '../helpers/mysql.js';
import { runMiddlewareSuite } from './suite.js';

await onMysql('test/middleware/mysql.test.ts', 'middleware', runMiddlewareSuite);
