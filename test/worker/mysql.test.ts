import type { MysqlStore } from '../../src/store/mysql/store.js';
import { onMysql } from '../helpers/mysql.js';
import { runCommitDoubtSuite } from './commit-doubt-suite.js';
import { runOutcomeSuite } from './outcome-suite.js';
import { runPoolExhaustionSuite } from './pool-exhaustion-suite.js';
import { runWorkerSuite } from './suite.js';
import { runTracingSuite } from './tracing-suite.js';
import { runTxCompleteSuite } from './tx-complete-suite.js';

await onMysql('test/worker/mysql.test.ts', 'worker', (factory) => {
  runWorkerSuite(factory);
  runOutcomeSuite(factory);
  runCommitDoubtSuite(factory);
  runPoolExhaustionSuite(factory, async (store) => {
    const conn = await (store as MysqlStore).db.pool.getConnection();
    return () => conn.release();
  });
  runTxCompleteSuite(factory);
  runTracingSuite(factory);
});
