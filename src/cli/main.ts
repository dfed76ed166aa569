#!/usr/bin/env node
/** The `tasklease` command. Everything happens in run(); this file only wires the real process to it. */
import { run } from './run.js';

const code = await run(process.argv.slice(2));
process.exitCode = code;
// The store is closed by now; should a driver still hold a handle, leave anyway (unref: no wait when nothing does).
setTimeout(() => process.exit(code), 1000).unref();
