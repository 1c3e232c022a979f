-- Version 7 on PostgreSQL: ../patch-7.sql with PostgreSQL's ids (64-bit, as
-- pg/schema.sql has them). The comments there say what each table is for.
CREATE TABLE IF NOT EXISTS mentions (
    message_id BIGINT NOT NULL REFERENCES messages(id),
    party_id   BIGINT NOT NULL REFERENCES parties(id),
    via        TEXT NOT NULL CHECK (via IN ('to','at','here','thread')),
    PRIMARY KEY (message_id, party_id)
);
CREATE INDEX IF NOT EXISTS idx_mentions_party ON mentions(party_id, message_id);
CREATE TABLE IF NOT EXISTS attention (
    channel_id BIGINT NOT NULL REFERENCES channels(id),
    party_id   BIGINT NOT NULL REFERENCES parties(id),
    mode       TEXT NOT NULL CHECK (mode IN ('all','mentions')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (channel_id, party_id)
);
CREATE INDEX IF NOT EXISTS idx_attention_party ON attention(party_id);
CREATE TABLE IF NOT EXISTS chains (
    message_id BIGINT PRIMARY KEY REFERENCES messages(id),
    chain      TEXT NOT NULL,
    hop        BIGINT NOT NULL
);
