-- Where notifications go: from MDBOOST_NOTIFY (source 'env') or added on the account page.
-- The URL holds its secrets in full so it can be used to send; pages and logs show only `label`.
CREATE TABLE notify_destinations (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,              -- scheme://host/…last4: the only form ever shown or logged
    source TEXT NOT NULL,             -- env | page
    created REAL NOT NULL,            -- unix seconds
    removed REAL                      -- NULL while in use; its undelivered messages are cancelled
);

-- The outbox: one row per event per destination, inserted in the transaction that saves what the
-- detector saw, delivered in id order per destination by a background task.
CREATE TABLE notify_outbox (
    id INTEGER PRIMARY KEY,
    destination_id INTEGER NOT NULL REFERENCES notify_destinations(id),
    dedup_key TEXT NOT NULL,          -- one event, one message: "run:12:milestone:50"
    kind TEXT NOT NULL,               -- started | milestone | finished | stalled | ... | summary
    created REAL NOT NULL,            -- unix seconds (the sampler's clock)
    message TEXT NOT NULL,            -- JSON {title, body, priority, tags, click}
    state TEXT NOT NULL DEFAULT 'pending', -- pending | delivered | summarised | cancelled
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL,       -- wall-clock unix seconds: the backoff
    last_error TEXT,                  -- masked: never holds a destination's secret
    delivered REAL,                   -- wall-clock unix seconds
    summary_id INTEGER REFERENCES notify_outbox(id), -- the summary that carried a held message
    UNIQUE (destination_id, dedup_key)
);
CREATE INDEX notify_outbox_queue ON notify_outbox(destination_id, state, id);
CREATE INDEX notify_outbox_sent ON notify_outbox(destination_id, delivered);

-- What the event detector saw last (JSON), saved with the outbox rows it produced, so a restart
-- neither repeats an event nor misses one.
CREATE TABLE notify_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL
);
