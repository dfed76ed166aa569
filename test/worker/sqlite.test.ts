import { sqliteFactory } from '../helpers/sqlite.js';
import { runBatchSuite } from './batch-suite.js';
import { runCommitDoubtSuite } from './commit-doubt-suite.js';
import { runLeaseBurstSuite } from './lease-burst-suite.js';
import { runOutcomeSuite } from './outcome-suite.js';
import { runStepSuite } from './steps-suite.js';
import { runWorkerSuite } from './suite.js';
import { runTracingSuite } from './tracing-suite.js';
import { runTxCompleteSuite } from './tx-complete-suite.js';

runWorkerSuite(sqliteFactory);
runOutcomeSuite(sqliteFactory);
runCommitDoubtSuite(sqliteFactory);
runTxCompleteSuite(sqliteFactory);
runTracingSuite(sqliteFactory);
runLeaseBurstSuite(sqliteFactory);
runBatchSuite(sqliteFactory);
runStepSuite(sqliteFactory);
