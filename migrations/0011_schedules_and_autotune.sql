-- Schedules: apply a preset from one local time of day to another, every day, and put
-- the original values back when the window ends. Times are minutes after local midnight in the
-- box's time zone (TZ), so "01:00" stays 01:00 across a change of daylight saving time.
CREATE TABLE schedules (
    id INTEGER PRIMARY KEY,
    preset TEXT NOT NULL,             -- applied at the start: boost, quiet, balanced, a user preset
    start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    end_minute INTEGER NOT NULL CHECK (end_minute BETWEEN 0 AND 1439),
    created REAL NOT NULL,            -- unix seconds
    removed REAL,                     -- NULL while in use
    -- The window this schedule acts on now: unix seconds of its start, NULL outside any window.
    -- Persisted so that a restart neither applies twice nor forgets to revert at the end.
    window_start REAL,
    applied REAL,                     -- when this window's preset was applied (NULL: not yet)
    overridden REAL,                  -- a person acted during this window: it wins until the end
    CHECK (start_minute <> end_minute)
);

-- Auto-tune: one sweep measures candidate settings on one running sync, then keeps the
-- smallest within ~5 % of the best. Its writes are ordinary journaled applies (tuning_ops, preset
-- 'autotune'); this table holds what is needed to put the sweep's knobs back after an abort or a
-- crash, and what the page shows.
CREATE TABLE autotune_sweeps (
    id INTEGER PRIMARY KEY,
    array TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(id),
    session_id INTEGER REFERENCES tuning_sessions(id), -- NULL until the first step is written
    opened_session INTEGER NOT NULL DEFAULT 0, -- 1: no session was open before: abort reverts it
    started REAL NOT NULL,
    finished REAL,
    state TEXT NOT NULL,              -- running | done | aborted | cancelled | interrupted | refused
    reason TEXT,                      -- why it ended, in words for the page
    start_values TEXT NOT NULL,       -- JSON {knob: value} as found when the sweep began
    plan TEXT NOT NULL,               -- JSON [{knob, reference, candidates}] in sweep order
    chosen TEXT                       -- JSON {knob: value} kept at the end
);
CREATE UNIQUE INDEX one_running_sweep ON autotune_sweeps(state) WHERE state = 'running';

-- Each measured step of a sweep: one setting held while md made progress.
CREATE TABLE autotune_steps (
    sweep_id INTEGER NOT NULL REFERENCES autotune_sweeps(id),
    seq INTEGER NOT NULL,             -- 0, 1, 2 ... in the order measured
    knob TEXT NOT NULL,               -- stripe_cache_size | read_ahead_kb
    value TEXT NOT NULL,
    role TEXT NOT NULL,               -- reference | candidate
    written REAL NOT NULL,            -- unix seconds the value was set (or kept)
    measured_from REAL,               -- after the settle time
    measured_to REAL,
    done_blocks INTEGER,              -- 1 KiB blocks of progress in the measured span
    speed_kb_s REAL,                  -- KiB/s over the measured span
    score REAL,                       -- speed / the mean of the reference steps either side
    note TEXT,                        -- at the speed limit, discarded (crossed the knee), ...
    PRIMARY KEY (sweep_id, seq)
);
