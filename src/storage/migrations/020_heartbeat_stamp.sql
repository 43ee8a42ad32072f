-- 020: the replay record of heartbeats on the member's own row. Never edit once committed; append a new file instead.
-- A heartbeat is accepted only when its envelope stamp (sent_at in ms since the epoch, then the nonce as a tie-break)
-- is later than the last accepted one; the same UPDATE that writes the heartbeat checks and records it, so a replay is
-- refused by every controller without a separate write per heartbeat (src/cluster/membership.ts). NULL: none yet.
ALTER TABLE cluster_nodes ADD COLUMN heartbeat_stamp_ms BIGINT;
ALTER TABLE cluster_nodes ADD COLUMN heartbeat_nonce TEXT;
