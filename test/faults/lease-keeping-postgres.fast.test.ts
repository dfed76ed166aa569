import { describeOnStore } from './describe-store.js';
import { poolExhaustionCase } from './lease-keeping-cases.js';

await describeOnStore('postgres', 'pool exhaustion', poolExhaustionCase);
