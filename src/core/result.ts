/** What a handler returns (or hands to ctx.complete): the success it reports and what it produced. */
export type TaskResultStatus = 'SUCCESS' | 'PARTIAL_SUCCESS';

export interface TaskResult {
  status: TaskResultStatus;
  /** An id of what the task produced (a file, a report), stored in artifact_id. */
  artifactId?: string | null;
  /** Any JSON value, stored in result_json. */
  result?: unknown;
}

export const TaskResult = {
  success(options: { artifactId?: string | null; result?: unknown } = {}): TaskResult {
    return { status: 'SUCCESS', ...options };
  },
  partial(options: { artifactId?: string | null; result?: unknown } = {}): TaskResult {
    return { status: 'PARTIAL_SUCCESS', ...options };
  },
};
