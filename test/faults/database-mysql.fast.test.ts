import { databaseFaultCases } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('mysql', 'database faults', (env) => databaseFaultCases(env, 'mysql'), { ownServer: true });
