import { sqliteFactory } from '../helpers/sqlite.js';
import { runSandboxSuite } from './sandbox-suite.js';

runSandboxSuite(sqliteFactory);
