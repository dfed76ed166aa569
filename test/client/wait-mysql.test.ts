import { onMysql } from '../helpers/mysql.js';
import { runWaitSuite } from './wait-suite.js';

await onMysql('test/client/wait-mysql.test.ts', 'waitFor', runWaitSuite);
