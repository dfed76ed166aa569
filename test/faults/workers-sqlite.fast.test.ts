import { describeOnStore } from './describe-store.js';
import { workerFaultCases } from './worker-cases.js';

await describeOnStore('sqlite', 'worker faults', (env) => workerFaultCases('sqlite', env));
