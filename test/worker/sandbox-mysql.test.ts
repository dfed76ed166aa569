import { onMysql } from '../helpers/mysql.js';
import { runSandboxSuite } from './sandbox-suite.js';

await onMysql('test/worker/sandbox-mysql.test.ts', 'sandbox', runSandboxSuite);
