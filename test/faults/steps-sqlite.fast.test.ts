import { describeOnStore } from './describe-store.js';
import { stepFaultCases } from './step-cases.js';

await describeOnStore('sqlite', 'durable step faults', (env) => stepFaultCases('sqlite', env));
