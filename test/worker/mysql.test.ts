import { onMysql } from '../helpers/mysql.js';
import { runCommitDoubtSuite } from './commit-doubt-suite.js';
import { runOutcomeSuite } from './outcome-suite.js';
import { runWorkerSuite } from './suite.js';
import { runTracingSuite } from './tracing-suite.js';
import { runTxCompleteSuite } from './tx-complete-suite.js';

await onMysql('test/worker/mysql.test.ts', 'worker', (factory) => {
  runWorkerSuite(factory);
  runOutcomeSuite(factory);
  runCommitDoubtSuite(factory);
  runTxCompleteSuite(factory);
  runTracingSuite(factory);
});
