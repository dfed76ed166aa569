import { adminFaultCases } from './admin-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('sqlite', 'refused calls', adminFaultCases);
