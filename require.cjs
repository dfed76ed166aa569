// tasklease is published as ES modules only. `require('tasklease')` lands here
// (the package's "require" export condition) so that the failure says why,
// instead of Node's ERR_PACKAGE_PATH_NOT_EXPORTED.
'use strict';
const error = new Error(
  "tasklease is ESM-only: use import (import { createClient } from 'tasklease') or, from CommonJS, dynamic import() (const { createClient } = await import('tasklease'))",
);
error.code = 'ERR_REQUIRE_ESM';
throw error;
