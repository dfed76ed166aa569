import { sqliteFactory } from '../helpers/sqlite.js';
import { runObserveSuite } from './suite.js';

runObserveSuite(sqliteFactory);
