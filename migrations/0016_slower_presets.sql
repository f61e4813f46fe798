-- A preset that made a sync on this box slower than the pace before it, in like conditions, and
-- that mdboost therefore put back by itself: remembered so that the boost estimate and the page
-- say so before the next press.
CREATE TABLE slower_presets (
    id INTEGER PRIMARY KEY,
    found_at REAL NOT NULL,           -- unix seconds
    op_id INTEGER NOT NULL REFERENCES tuning_ops(id),
    array TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(id),
    action TEXT NOT NULL,             -- reshape | recovery | resync | check | repair
    preset TEXT NOT NULL,
    kernel_release TEXT,              -- uname -r when it was found
    before_kb_s REAL NOT NULL,        -- KiB/s, mean pace before the apply
    after_kb_s REAL NOT NULL,         -- KiB/s, mean pace after it settled, in like conditions
    noise_kb_s REAL NOT NULL,         -- KiB/s, the comparison's own noise (two standard errors)
    other_io INTEGER NOT NULL,        -- 1: compared while other I/O used the array
    md_thread TEXT,                   -- the busiest md thread then, and its share of a core
    md_thread_cores REAL,
    knobs TEXT NOT NULL DEFAULT '[]'  -- JSON: the keys put back
);
CREATE INDEX slower_presets_by_preset ON slower_presets(preset, found_at);
