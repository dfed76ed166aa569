-- The cost of a commit's WAL flush: one-row inserts, each its own transaction,
-- with synchronous_commit on and then off (psql prints each statement's time).
-- Run: psql -h 127.0.0.1 -U postgres test -f bench/commit-probe.sql
-- A regular table: a temporary one writes no WAL, so its commits flush nothing.
CREATE TABLE commit_probe (a int);
\timing on
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
SET synchronous_commit = off;
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
INSERT INTO commit_probe VALUES (1);
\timing off
DROP TABLE commit_probe;
