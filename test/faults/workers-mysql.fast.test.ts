import { describeOnStore } from './describe-store.js';
import { workerFaultCases } from './worker-cases.js';

await describeOnStore('mysql', 'worker faults', (env) => workerFaultCases('mysql', env));
