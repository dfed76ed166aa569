import { sqliteFactory } from '../helpers/sqlite.js';
import { runEncryptionSuite } from './suite.js';

runEncryptionSuite(sqliteFactory);
