-- 050: how long a SEAL replay record (seal_seen_signatures) must be kept. Never edit once committed; append a new file.
-- A signature must stay refused for as long as its session could use it: until the session's expires_at (plus the
-- clock skew envelopes are allowed). Past that the token is refused before the replay check, so the row can go;
-- nothing removed rows before, and the table grew with every tool call. keep_until is what the prune reads (through
-- its index, oldest first, in bounded batches: src/seal/prune.ts). Rows written before this migration take their
-- session's expiry; a row whose session is gone is kept one more day. The default only serves nodes not yet upgraded.
ALTER TABLE seal_seen_signatures ADD COLUMN keep_until TIMESTAMPTZ NOT NULL DEFAULT (now() + INTERVAL '1 day');
UPDATE seal_seen_signatures SET keep_until = (
  SELECT ss.expires_at + INTERVAL '1 minute' FROM seal_sessions ss WHERE ss.session_id = seal_seen_signatures.session_id
) WHERE EXISTS (SELECT 1 FROM seal_sessions ss WHERE ss.session_id = seal_seen_signatures.session_id);
CREATE INDEX seal_seen_signatures_keep_until ON seal_seen_signatures (keep_until);
