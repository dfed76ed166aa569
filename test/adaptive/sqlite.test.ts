import { sqliteFactory } from '../helpers/sqlite.js';
import { runAdaptiveSuite } from './suite.js';

runAdaptiveSuite(sqliteFactory);
