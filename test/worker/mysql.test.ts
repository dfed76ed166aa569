import { onMysql } from '../helpers/mysql.js';
import { runWorkerSuite } from './suite.js';

await onMysql('test/worker/mysql.test.ts', 'worker', runWorkerSuite);
