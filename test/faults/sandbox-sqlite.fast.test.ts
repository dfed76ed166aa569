import { describeOnStore } from './describe-store.js';
import { sandboxFaultCases } from './sandbox-cases.js';

await describeOnStore('sqlite', 'sandbox faults', (env) => sandboxFaultCases(env));
