import { onMysql } from '../helpers/mysql.js';
import { runSequenceSuite } from './suite.js';

await onMysql('test/sequences/mysql.test.ts', 'sequences', runSequenceSuite);
