-- Version 6: claims — a party's lease on a shared thing (a path in a
-- repository, a branch, an environment, a port, a schema, a name), which
-- expires unless its holder stays active. New tables only: the chat's own
-- tables stay as the Python edition has them, and it ignores these.
CREATE TABLE IF NOT EXISTS claims (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,                      -- path, branch, env, port, schema, name
    owner_id    INTEGER REFERENCES parties(id),     -- path: whose repository the pattern is in
    pattern     TEXT NOT NULL,                      -- a glob; for path, relative to the owner's root
    holder_id   INTEGER NOT NULL REFERENCES parties(id),
    exclusive   INTEGER NOT NULL DEFAULT 1,
    reason      TEXT NOT NULL DEFAULT '',
    item_id     INTEGER REFERENCES messages(id),    -- the item it serves: resolving it releases the claim
    ttl_seconds INTEGER NOT NULL,
    claimed_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,                      -- moved on while the holder is active
    renew_until TEXT NOT NULL,                      -- claimed_at + claims.max_lifetime: the latest it may be moved to
    ended_at    TEXT,                               -- set when released, freed, resolved or handed over; a claim past expires_at has ended then
    ended_how   TEXT,
    ended_by    INTEGER REFERENCES parties(id)
);
-- Parties that were refused a claim while this one held it: told when it ends.
CREATE TABLE IF NOT EXISTS claim_waiters (
    claim_id  INTEGER NOT NULL REFERENCES claims(id),
    party_id  INTEGER NOT NULL REFERENCES parties(id),
    asked_at  TEXT NOT NULL,
    PRIMARY KEY (claim_id, party_id)
);
CREATE INDEX IF NOT EXISTS idx_claims_live ON claims(kind, expires_at) WHERE ended_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_claims_holder ON claims(holder_id, expires_at);
CREATE INDEX IF NOT EXISTS idx_claims_item ON claims(item_id) WHERE item_id IS NOT NULL AND ended_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_claim_waiters_party ON claim_waiters(party_id);
