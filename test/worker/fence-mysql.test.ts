import { onMysql } from '../helpers/mysql.js';
import { runFenceSuite } from './fence-suite.js';

await onMysql('test/worker/fence-mysql.test.ts', 'fence', runFenceSuite);
