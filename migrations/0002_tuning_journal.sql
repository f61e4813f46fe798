-- A tuning session runs from mdboost's first write to the revert that puts the originals back.
CREATE TABLE tuning_sessions (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    preset TEXT NOT NULL,             -- the preset applied last
    arrays TEXT NOT NULL DEFAULT '[]',-- JSON: arrays the session tunes
    ended REAL,                       -- NULL while the session is open
    end_reason TEXT
);
CREATE UNIQUE INDEX one_open_tuning_session ON tuning_sessions(ended IS NULL) WHERE ended IS NULL;

-- Each knob the session touched: its value before mdboost's first write, and what it should be now.
CREATE TABLE tuning_knobs (
    session_id INTEGER NOT NULL REFERENCES tuning_sessions(id),
    key TEXT NOT NULL,                -- "stripe_cache_size@md2"
    knob TEXT NOT NULL,               -- catalogue name; the path is rebuilt from it, never stored
    target TEXT,                      -- array or disk, NULL for global knobs
    original TEXT NOT NULL,           -- normalised: "256", "system"
    desired TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
);

-- Every apply and revert, journaled before the first write so a crash can be reconciled.
CREATE TABLE tuning_ops (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES tuning_sessions(id),
    kind TEXT NOT NULL,               -- apply | revert
    preset TEXT,
    started REAL NOT NULL,
    finished REAL,
    state TEXT NOT NULL,              -- in_progress | done | rolled_back | failed
    changes TEXT NOT NULL DEFAULT '[]', -- JSON [{key, knob, target, from, to}]
    arrays TEXT NOT NULL DEFAULT '[]',
    error TEXT
);
CREATE INDEX tuning_ops_by_state ON tuning_ops(state);

-- Measured effect of an apply on one array's run: mean speed before and after.
CREATE TABLE tuning_effects (
    op_id INTEGER NOT NULL REFERENCES tuning_ops(id),
    array TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(id),
    preset TEXT NOT NULL,
    applied_at REAL NOT NULL,
    before_kb_s REAL,
    after_kb_s REAL,
    ratio REAL,
    measured_at REAL,
    PRIMARY KEY (op_id, array)
);
