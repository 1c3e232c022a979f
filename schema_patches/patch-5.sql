-- Version 5: due times and the escalation ladder (docs/protocol.md, Due
-- times). Tables of their own beside the Python edition's, which stay as
-- they are (it ignores tables it does not know).
--
-- An item's due time, and where its ladder stands: stage is the newest
-- stage fired for this due time ('due' before the first), next_at when the
-- next one fires (NULL once none is left: the ladder is over, or nobody
-- owes an ack any more). Times are written as every row's are (UTC,
-- microseconds), so they sort as text.
CREATE TABLE IF NOT EXISTS item_due (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id),
    due_at     TEXT NOT NULL,
    stage      TEXT NOT NULL DEFAULT 'due'
               CHECK (stage IN ('due','overdue','raiser','person')),
    next_at    TEXT,
    set_at     TEXT NOT NULL
);
-- Every process that runs the clock arms its one timer with the smallest
-- next_at, and a stage fires for the rows whose next_at has come: both
-- read this index from its start, however long the history.
CREATE INDEX IF NOT EXISTS idx_item_due_next ON item_due(next_at) WHERE next_at IS NOT NULL;
-- What happened on the ladder, once per stage: when it was to fire
-- (planned_at) and did (at), for whom (party names, comma-separated), and
-- for the person stage how the person was told (outcome). A reassignment
-- is recorded here too, as often as the raiser makes one; due_at is the
-- due time the row belongs to (NULL: a reassignment of an item without
-- one).
CREATE TABLE IF NOT EXISTS item_stages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES messages(id),
    stage      TEXT NOT NULL CHECK (stage IN ('overdue','raiser','person','reassigned')),
    due_at     TEXT,
    planned_at TEXT NOT NULL,
    at         TEXT NOT NULL,
    parties    TEXT NOT NULL,
    outcome    TEXT
);
CREATE INDEX IF NOT EXISTS idx_item_stages_item ON item_stages(message_id);
-- A stage of the ladder fires once per due time, whichever process claims
-- it: a second insert of it fails instead of telling anyone twice.
CREATE UNIQUE INDEX IF NOT EXISTS idx_item_stages_once ON item_stages(message_id, stage, due_at) WHERE stage <> 'reassigned';
