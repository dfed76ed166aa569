import { adminFaultCases } from './admin-cases.js';
import { describeOnStore } from './describe-store.js';
import { inputFaultCases } from './input-cases.js';

await describeOnStore('sqlite', 'bad input and refused calls', (env) => {
  inputFaultCases(env);
  adminFaultCases(env);
});
