/** Observability: typed events, Prometheus metrics, health checks and structured logging. */
export { Emitter, type Listener } from '../core/emitter.js';
export { createMetrics, DEFAULT_SECONDS_BUCKETS, type MetricsOptions, type StoreMetricsOptions, type TaskleaseMetrics } from './metrics.js';
export {
  controlPlaneHealth,
  workerHealth,
  worstStatus,
  type ControlPlaneDetails,
  type ControlPlaneHealthOptions,
  type HealthReport,
  type HealthStatus,
  type WorkerHealthDetails,
  type WorkerHealthOptions,
} from './health.js';
export { attachLogger, attachClientLogger, type LoggingOptions } from './logging.js';
export { recordQueueHistory, QueueHistoryRecorder, type QueueHistoryOptions } from './queue-history.js';
