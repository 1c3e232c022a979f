-- Version 7: attention (docs/protocol.md, Attention). Tables of their own
-- beside the Python edition's, which stay as they are (it ignores tables it
-- does not know).
--
-- Who a message is addressed to, written once when it is posted and never
-- parsed again: the parties it names in to (via 'to') or as @name in its
-- text ('at'), every seated party for @here and @all ('here'), and, for a
-- reply, the parties that wrote in its thread or were addressed there
-- ('thread'). One row per party, the first of those that applies; the
-- author is never one. A party in mentions mode is told in full and woken
-- only for messages it has a row for.
CREATE TABLE IF NOT EXISTS mentions (
    message_id INTEGER NOT NULL REFERENCES messages(id),
    party_id   INTEGER NOT NULL REFERENCES parties(id),
    via        TEXT NOT NULL CHECK (via IN ('to','at','here','thread')),
    PRIMARY KEY (message_id, party_id)
);
-- What is addressed to a party since its cursor: a range of this index
-- from the message at the cursor on (a channel's ids grow with its seqs),
-- however long the history; parties move --merge and forget use it too.
CREATE INDEX IF NOT EXISTS idx_mentions_party ON mentions(party_id, message_id);
-- A party's attention in a channel, when it chose one: 'all' (told every
-- message in full, woken by any) or 'mentions'. Without a row the channel's
-- size decides (attention.default_above).
CREATE TABLE IF NOT EXISTS attention (
    channel_id INTEGER NOT NULL REFERENCES channels(id),
    party_id   INTEGER NOT NULL REFERENCES parties(id),
    mode       TEXT NOT NULL CHECK (mode IN ('all','mentions')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (channel_id, party_id)
);
CREATE INDEX IF NOT EXISTS idx_attention_party ON attention(party_id);
-- The chain of a message posted in a turn that a prompt or a wake began:
-- the chain's id (a person's prompt starts a new one) and how many
-- agent-only hops lie between that prompt and this post (0: the turn the
-- person prompted). A message without a row was posted outside any known
-- turn and counts as hop 0. Past attention.max_hops a post wakes no one.
CREATE TABLE IF NOT EXISTS chains (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id),
    chain      TEXT NOT NULL,
    hop        INTEGER NOT NULL
);
