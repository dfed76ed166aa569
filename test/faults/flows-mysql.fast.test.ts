import { describeOnStore } from './describe-store.js';
import { flowFaultCases } from './flow-cases.js';

await describeOnStore('mysql', 'flow faults', (env) => flowFaultCases(env));
