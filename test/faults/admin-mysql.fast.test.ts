import { adminFaultCases } from './admin-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('mysql', 'refused calls', adminFaultCases);
