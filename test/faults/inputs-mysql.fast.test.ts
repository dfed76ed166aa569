import { describeOnStore } from './describe-store.js';
import { inputFaultCases } from './input-cases.js';

await describeOnStore('mysql', 'bad input', inputFaultCases);
