-- What GET /api/runs and the page's past runs show of each run, kept up as the run goes by the
-- sampler: listing runs reads one row per run instead of every sample of every run.
ALTER TABLE runs ADD COLUMN speed_samples INTEGER NOT NULL DEFAULT 0;  -- samples with a speed
ALTER TABLE runs ADD COLUMN speed_sum_kb_s REAL NOT NULL DEFAULT 0;    -- their speeds' sum, KiB/s
ALTER TABLE runs ADD COLUMN last_percent REAL;                         -- the highest percent seen
UPDATE runs SET
    speed_samples = (SELECT COUNT(speed_kb_s) FROM samples WHERE run_id = runs.id),
    speed_sum_kb_s = (SELECT COALESCE(SUM(speed_kb_s), 0) FROM samples WHERE run_id = runs.id),
    last_percent = (SELECT MAX(percent) FROM samples WHERE run_id = runs.id);
-- A run's chart markers and past presets pick a few kinds of event out of its many diagnoses.
CREATE INDEX events_by_run_kind ON events(run_id, kind, ts);
