import type { MysqlStore } from '../../src/store/mysql/store.js';
import { onMysql } from '../helpers/mysql.js';
import { runBatchSuite } from './batch-suite.js';
import { runCommitDoubtSuite } from './commit-doubt-suite.js';
import { runOutcomeSuite } from './outcome-suite.js';
import { runLeaseBurstSuite } from './lease-burst-suite.js';
import { runPoolExhaustionSuite, type HoldConnection } from './pool-exhaustion-suite.js';
import { runStepSuite } from './steps-suite.js';
import { runWorkerSuite } from './suite.js';
import { runTracingSuite } from './tracing-suite.js';
import { runTxCompleteSuite } from './tx-complete-suite.js';

const holdClient: HoldConnection = async (store) => {
  const conn = await (store as MysqlStore).db.pool.getConnection();
  return () => conn.release();
};

await onMysql('test/worker/mysql.test.ts', 'worker', (factory) => {
  runWorkerSuite(factory);
  runOutcomeSuite(factory);
  runCommitDoubtSuite(factory);
  runPoolExhaustionSuite(factory, holdClient);
  runLeaseBurstSuite(factory, holdClient);
  runTxCompleteSuite(factory);
  runTracingSuite(factory);
  runBatchSuite(factory);
  runStepSuite(factory);
});
