-- Version 3: indexes found by the benchmarks (docs/performance.md).
-- chat_channel_list counts each channel's live items; with only the
-- status-first idx_messages_items (or idx_messages_live, which holds every
-- live row) that count walked all of the channel's live messages.
CREATE INDEX IF NOT EXISTS idx_messages_channel_items ON messages(channel_id, status) WHERE kind = 'ask' AND is_archived = 0;
-- An item addressed by its bare slug (chat_ack item="chunk-api") is looked
-- up in every channel at once; without this the planner scans all messages.
CREATE INDEX IF NOT EXISTS idx_messages_slug ON messages(slug) WHERE slug IS NOT NULL;
-- The archive sweep (on every read, inbox and prune-ok) asks of each done
-- item whether a consumer still owes its prune-ok: one probe into the few
-- consumer rows still pending (the index alone answers), instead of reading
-- every consumer row.
CREATE INDEX IF NOT EXISTS idx_consumers_pending ON item_consumers(message_id, prune_ok_at) WHERE prune_ok_at IS NULL;
