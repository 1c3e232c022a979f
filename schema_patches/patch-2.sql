-- Version 2: indexes that keep every call flat as the history grows.
-- Unread counts, read pages and "more" counts become index-only scans of
-- one channel's live (or archived) rows.
CREATE INDEX IF NOT EXISTS idx_messages_live ON messages(channel_id, is_archived, seq, author_id);
-- The archive sweep and the inbox look only at live items, a small set.
CREATE INDEX IF NOT EXISTS idx_messages_items ON messages(status, channel_id) WHERE kind = 'ask' AND is_archived = 0;
