import { describeOnStore } from './describe-store.js';
import { inputFaultCases } from './input-cases.js';

await describeOnStore('sqlite', 'bad input', inputFaultCases);
