import { sqliteFactory } from '../helpers/sqlite.js';
import { runOutcomeSuite } from './outcome-suite.js';
import { runWorkerSuite } from './suite.js';

runWorkerSuite(sqliteFactory);
runOutcomeSuite(sqliteFactory);
