import { onMysql } from '../helpers/mysql.js';
import { runObserveSuite } from './suite.js';

await onMysql('test/observe/mysql.test.ts', 'observability', runObserveSuite);
