import { sqliteFactory } from '../helpers/sqlite.js';
import { runUniqueSuite } from './unique-suite.js';

runUniqueSuite(sqliteFactory);
