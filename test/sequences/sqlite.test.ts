import { sqliteFactory } from '../helpers/sqlite.js';
import { runSequenceSuite } from './suite.js';

runSequenceSuite(sqliteFactory);
