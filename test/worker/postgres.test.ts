import type { PostgresStore } from '../../src/store/postgres/store.js';
import { onPostgres } from '../helpers/postgres.js';
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
  const client = await (store as PostgresStore).pool.connect();
  return () => client.release();
};

await onPostgres('test/worker/postgres.test.ts', 'worker', (factory) => {
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
