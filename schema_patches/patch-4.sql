-- Version 4: delivery states and safe retries (docs/protocol.md). New
-- tables only: the Python edition ignores tables it does not know, and
-- they name no foreign key, so that its writes to the chat's own tables
-- (forgetting a party, say) never trip over a row of ours.
--
-- told: our hook or wake put a message into a party's session — when,
-- and by which event (SessionStart, UserPromptSubmit, Stop, wake). The
-- first telling is kept. Written by the party's serve from what the hook
-- journalled once its output had reached the client; the hook itself
-- never writes the chat.
CREATE TABLE IF NOT EXISTS told (
    message_id BIGINT NOT NULL,
    party_id   BIGINT NOT NULL,
    told_at    TEXT NOT NULL,
    via        TEXT NOT NULL,
    PRIMARY KEY (message_id, party_id)
);
-- idempotency_keys: the first answer to a writing call made with an
-- idempotency_key, per party, kept 7 days (and at most the newest 1,000
-- per party), so that a retry gets that answer and writes nothing.
-- created_ns orders them as numbers, not as text the engines may collate
-- differently.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    party_id   BIGINT NOT NULL,
    call_key   TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args_hash  TEXT NOT NULL,
    answer     TEXT NOT NULL,
    display    TEXT NOT NULL,
    created_ns BIGINT NOT NULL,
    PRIMARY KEY (party_id, call_key)
);
CREATE INDEX IF NOT EXISTS idx_idempotency_age ON idempotency_keys(party_id, created_ns);
