/**
 * Every command of `tasklease`, in help order. A new command is one file in
 * this folder exporting a CliCommand, and one line here.
 */
import type { CliCommand } from '../command.js';
import { actionsCommand } from './actions.js';
import { adaptiveCommand } from './adaptive.js';
import { estimateCommand } from './estimate.js';
import { analyzeCommand } from './analyze.js';
import { bulkCommand } from './bulk.js';
import { cancelCommand } from './cancel.js';
import { cleanupCommand } from './cleanup.js';
import { controlCommands } from './control.js';
import { diagnoseCommand } from './diagnose.js';
import { dlqCommand } from './dlq.js';
import { editCommand } from './edit.js';
import { flowCommand } from './flow.js';
import { publishCommand, subscriptionsCommand } from './events.js';
import { getCommand } from './get.js';
import { historyCommand } from './history.js';
import { listCommand } from './list.js';
import { migrateCommand } from './migrate.js';
import { moveCommand } from './move.js';
import { policyCommand } from './policy.js';
import { rescheduleCommand } from './reschedule.js';
import { scheduleCommand } from './schedule.js';
import { sequencesCommand } from './sequences.js';
import { stepsCommand } from './steps.js';
import { logsCommand } from './logs.js';
import { serveCommands } from './serve.js';
import { submitCommand } from './submit.js';
import { tokenCommand } from './token.js';
import { workerCommand } from './worker.js';
import { waitCommand } from './wait.js';
import { workersCommand } from './workers.js';

export const COMMANDS: readonly CliCommand[] = [
  migrateCommand,
  moveCommand,
  serveCommands,
  workerCommand,
  submitCommand,
  flowCommand,
  publishCommand,
  getCommand,
  waitCommand,
  listCommand,
  cancelCommand,
  controlCommands,
  rescheduleCommand,
  editCommand,
  bulkCommand,
  diagnoseCommand,
  estimateCommand,
  actionsCommand,
  stepsCommand,
  logsCommand,
  analyzeCommand,
  dlqCommand,
  cleanupCommand,
  historyCommand,
  policyCommand,
  adaptiveCommand,
  scheduleCommand,
  subscriptionsCommand,
  sequencesCommand,
  workersCommand,
  tokenCommand,
];
