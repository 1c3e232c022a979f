-- Schema v1, shared with the Python edition. Never edit this file: a change
-- goes in a new patch-N.sql (N = the version it brings the database to).
CREATE TABLE IF NOT EXISTS parties (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL UNIQUE,
    workspace_path TEXT NOT NULL UNIQUE,
    os_user        TEXT,
    about          TEXT,                    -- optional self-description, set by chat_whoami
    first_seen     TEXT NOT NULL,
    last_seen      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS channels (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,        -- slug: "mesh-gw--node-dash", "chunk-api"
    about      TEXT,
    created_by INTEGER REFERENCES parties(id),
    created_at TEXT NOT NULL,
    is_closed  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS channel_parties (
    channel_id INTEGER NOT NULL REFERENCES channels(id),
    party_id   INTEGER NOT NULL REFERENCES parties(id),
    joined_at  TEXT NOT NULL,
    left_at    TEXT,
    PRIMARY KEY (channel_id, party_id)
);
CREATE TABLE IF NOT EXISTS messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    channel_id  INTEGER NOT NULL REFERENCES channels(id),
    seq         INTEGER NOT NULL,           -- per-channel monotonic, assigned under transaction
    kind        TEXT NOT NULL CHECK (kind IN ('say','ask','reply','event')),
    parent_id   INTEGER REFERENCES messages(id),   -- reply → its ask/say
    slug        TEXT,                       -- items only: short stable handle ("chunk-api")
    title       TEXT,                       -- items only
    body        TEXT NOT NULL,
    ref         TEXT,                       -- free text: "plan:tls-upgrade#2", "src/x.py:120"
    author_id   INTEGER NOT NULL REFERENCES parties(id),
    status      TEXT NOT NULL DEFAULT 'none'
                CHECK (status IN ('none','open','ack','done')),
    is_archived INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (channel_id, seq),
    UNIQUE (channel_id, slug)
);
CREATE TABLE IF NOT EXISTS item_consumers (
    message_id   INTEGER NOT NULL REFERENCES messages(id),
    party_id     INTEGER NOT NULL REFERENCES parties(id),
    acked_at     TEXT,
    prune_ok_at  TEXT,
    PRIMARY KEY (message_id, party_id)
);
CREATE TABLE IF NOT EXISTS cursors (
    channel_id INTEGER NOT NULL REFERENCES channels(id),
    party_id   INTEGER NOT NULL REFERENCES parties(id),
    last_seq   INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (channel_id, party_id)
);
CREATE TABLE IF NOT EXISTS schema_version (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    version    INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_messages_channel_seq   ON messages(channel_id, seq);
CREATE INDEX IF NOT EXISTS idx_messages_parent        ON messages(parent_id);
CREATE INDEX IF NOT EXISTS idx_messages_open          ON messages(channel_id, status, is_archived);
CREATE INDEX IF NOT EXISTS idx_consumers_party        ON item_consumers(party_id);
