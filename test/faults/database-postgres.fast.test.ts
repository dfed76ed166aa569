import { databaseFaultCases } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('postgres', 'database faults', (env) => databaseFaultCases(env, 'postgres'), { ownServer: true });
