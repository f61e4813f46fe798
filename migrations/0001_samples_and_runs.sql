-- One operation (resync, recovery, reshape, check) on one array is one run.
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    array TEXT NOT NULL,
    action TEXT NOT NULL,
    started REAL NOT NULL,            -- unix seconds
    finished REAL,                    -- NULL while it runs
    outcome TEXT NOT NULL DEFAULT 'running',  -- running | completed | interrupted | restarted | vanished
    total_blocks INTEGER              -- 1 KiB blocks, from mdstat
);
CREATE INDEX runs_by_array ON runs(array, started);
CREATE UNIQUE INDEX one_open_run_per_array ON runs(array) WHERE finished IS NULL;

-- One row per array per sampler tick.
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,                 -- unix seconds
    array TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(id),
    state TEXT,                       -- active | inactive
    status TEXT,                      -- [UU_U] as printed
    degraded INTEGER,                 -- missing devices (sysfs)
    action TEXT,                      -- running operation, NULL when idle
    percent REAL,                     -- as printed by the kernel
    done_blocks INTEGER,              -- 1 KiB blocks
    total_blocks INTEGER,             -- 1 KiB blocks
    speed_kb_s INTEGER,               -- mdstat speed=
    finish_min REAL,                  -- mdstat finish=
    sync_speed_kb_s INTEGER,          -- sysfs sync_speed
    mismatch_cnt INTEGER,
    stripe_cache_size INTEGER,        -- entries
    speed_min_kb_s INTEGER,           -- effective minimum for this array
    speed_max_kb_s INTEGER            -- effective maximum for this array
);
CREATE INDEX samples_by_array ON samples(array, ts);
CREATE INDEX samples_by_run ON samples(run_id, ts);

-- Things that happened to a run or array: preset applied, reverted, drift seen.
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    array TEXT,
    run_id INTEGER REFERENCES runs(id),
    kind TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}' -- JSON
);
CREATE INDEX events_by_run ON events(run_id, ts);
CREATE INDEX events_by_ts ON events(ts);
