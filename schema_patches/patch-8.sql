-- Version 8: read times (docs/protocol.md, Read receipts). A table of its
-- own beside the Python edition's, which stay as they are (it ignores
-- tables it does not know).
--
-- When a party's cursor in a channel moved forward, and to where: the
-- party read every message up to upto_seq at read_at. A message's read
-- time for a party is the read_at of the party's first row whose upto_seq
-- reaches the message's seq. One row per move, and no two moves of a party
-- in a channel stop at the same seq, so the rows are at most one per
-- message per seated party. Cursors the Python edition moved, or moved
-- before this version, have no row: those messages are read, when is not
-- known. A cursor brought back (mcpp-chat parties cursor, a post behind a
-- cursor past the newest row) takes its rows past it along.
CREATE TABLE IF NOT EXISTS reads (
    channel_id BIGINT NOT NULL REFERENCES channels(id),
    party_id   BIGINT NOT NULL REFERENCES parties(id),
    upto_seq   BIGINT NOT NULL,
    read_at    TEXT NOT NULL,
    PRIMARY KEY (channel_id, party_id, upto_seq)
);
-- parties move --merge and forget find a party's rows.
CREATE INDEX IF NOT EXISTS idx_reads_party ON reads(party_id);
