-- How far a claim walks past entries of already-claimed rows at the head of
-- the claim index. Run: psql -h 127.0.0.1 -U postgres test -f bench/claim-index-probe.sql
-- A scratch schema mirrors the claim index; 500k of 1M rows are then "claimed".
DROP SCHEMA IF EXISTS claim_index_probe CASCADE;
CREATE SCHEMA claim_index_probe;
CREATE TABLE claim_index_probe.t (id text PRIMARY KEY, task_type text, status text, priority int,
  available_at timestamptz, create_time timestamptz, deadline_at timestamptz);
CREATE INDEX ix_claim ON claim_index_probe.t (task_type, priority DESC, available_at, create_time, id)
  WHERE status IN ('QUEUED', 'RETRY_WAIT');
INSERT INTO claim_index_probe.t SELECT lpad(i::text, 10, '0'), 'noop', 'QUEUED', 0,
  now() - interval '1 hour' + i * interval '1 ms', now(), NULL FROM generate_series(1, 1000000) i;
VACUUM ANALYZE claim_index_probe.t;
\echo 'before any claim:'
EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM claim_index_probe.t WHERE task_type = 'noop' AND status IN ('QUEUED', 'RETRY_WAIT')
  AND available_at <= now() AND (deadline_at IS NULL OR deadline_at > now())
  ORDER BY priority DESC, available_at, create_time, id LIMIT 500 FOR UPDATE SKIP LOCKED;
UPDATE claim_index_probe.t SET status = 'SUCCESS' WHERE id <= lpad('500000', 10, '0');
\echo 'after 500k claims, first scan (marks the dead entries) and second scan:'
EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM claim_index_probe.t WHERE task_type = 'noop' AND status IN ('QUEUED', 'RETRY_WAIT')
  AND available_at <= now() AND (deadline_at IS NULL OR deadline_at > now())
  ORDER BY priority DESC, available_at, create_time, id LIMIT 500 FOR UPDATE SKIP LOCKED;
EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM claim_index_probe.t WHERE task_type = 'noop' AND status IN ('QUEUED', 'RETRY_WAIT')
  AND available_at <= now() AND (deadline_at IS NULL OR deadline_at > now())
  ORDER BY priority DESC, available_at, create_time, id LIMIT 500 FOR UPDATE SKIP LOCKED;
DROP SCHEMA claim_index_probe CASCADE;
