import { onMysql } from '../helpers/mysql.js';
import { runMoveSuite } from './move-suite.js';

await onMysql('test/client/move-mysql.test.ts', 'move', runMoveSuite);
