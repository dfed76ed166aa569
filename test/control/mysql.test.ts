import { onMysql } from '../helpers/mysql.js';
import { runControlSuite } from './suite.js';

await onMysql('test/control/mysql.test.ts', 'control plane', runControlSuite);
