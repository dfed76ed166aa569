import { sqliteFactory } from '../helpers/sqlite.js';
import { runEstimateSuite } from './suite.js';

runEstimateSuite(sqliteFactory);
