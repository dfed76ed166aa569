import { onMysql } from '../helpers/mysql.js';
import { runFlowSuite } from './suite.js';

await onMysql('test/flows/mysql.test.ts', 'flows', runFlowSuite);
