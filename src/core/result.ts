/** What a handler returns for a success (or hands to ctx.complete): the status it reports and what it produced. */
export type TaskResultStatus = 'SUCCESS' | 'PARTIAL_SUCCESS';

export interface TaskResult {
  status: TaskResultStatus;
  /** An id of what the task produced (a file, a report), stored in artifact_id. */
  artifactId?: string | null;
  /** Any JSON value, stored in result_json. */
  result?: unknown;
}
