-- Each array's slowest and fastest sample per fixed period, so the samples endpoint picks a month's
-- chart extremes from a few thousand rollup rows instead of ~150k samples.
-- Slowest and fastest use the endpoint's order: speed (NULL = -1), then ts, then id, so a rollup
-- pick is the pick a scan of the raw samples would make.
CREATE TABLE sample_rollup_levels (
    period_s INTEGER PRIMARY KEY      -- seconds
);
INSERT INTO sample_rollup_levels VALUES (60), (900), (10800);

CREATE TABLE sample_rollup (
    array TEXT NOT NULL,
    period_s INTEGER NOT NULL,        -- a sample_rollup_levels row
    period INTEGER NOT NULL,          -- CAST(ts / period_s AS INTEGER) of the samples it covers
    slowest_id INTEGER NOT NULL,      -- samples.id
    slowest_kb_s INTEGER NOT NULL,    -- COALESCE(speed_kb_s, -1)
    slowest_ts REAL NOT NULL,         -- unix seconds
    fastest_id INTEGER NOT NULL,
    fastest_kb_s INTEGER NOT NULL,
    fastest_ts REAL NOT NULL,
    PRIMARY KEY (array, period_s, period)
) WITHOUT ROWID;

-- Every insert, whoever makes it, updates the rollup in its own transaction (as sqlite-utils keeps
-- FTS tables in step). downsample() deletes samples and rebuilds the periods it touched.
CREATE TRIGGER samples_rollup_on_insert AFTER INSERT ON samples
BEGIN
    INSERT INTO sample_rollup
    SELECT NEW.array, period_s, CAST(NEW.ts / period_s AS INTEGER),
           NEW.id, COALESCE(NEW.speed_kb_s, -1), NEW.ts,
           NEW.id, COALESCE(NEW.speed_kb_s, -1), NEW.ts
    FROM sample_rollup_levels WHERE true
    ON CONFLICT DO UPDATE SET
        slowest_id = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
            < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_id, slowest_id),
        slowest_ts = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
            < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_ts, slowest_ts),
        slowest_kb_s = min(excluded.slowest_kb_s, slowest_kb_s),
        fastest_id = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
            < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_id, fastest_id),
        fastest_ts = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
            < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_ts, fastest_ts),
        fastest_kb_s = max(excluded.fastest_kb_s, fastest_kb_s);
END;

-- Backfill from the samples already stored, with the same rule.
INSERT INTO sample_rollup
SELECT samples.array, period_s, CAST(samples.ts / period_s AS INTEGER),
       samples.id, COALESCE(samples.speed_kb_s, -1), samples.ts,
       samples.id, COALESCE(samples.speed_kb_s, -1), samples.ts
FROM samples, sample_rollup_levels WHERE true
ON CONFLICT DO UPDATE SET
    slowest_id = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
        < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_id, slowest_id),
    slowest_ts = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
        < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_ts, slowest_ts),
    slowest_kb_s = min(excluded.slowest_kb_s, slowest_kb_s),
    fastest_id = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
        < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_id, fastest_id),
    fastest_ts = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
        < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_ts, fastest_ts),
    fastest_kb_s = max(excluded.fastest_kb_s, fastest_kb_s);
