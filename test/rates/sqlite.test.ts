import { sqliteFactory } from '../helpers/sqlite.js';
import { runRateSuite } from './suite.js';

runRateSuite(sqliteFactory);
