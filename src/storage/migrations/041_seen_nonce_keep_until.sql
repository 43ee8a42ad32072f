-- 041: how long a cluster replay record must be kept. Never edit once committed; append a new file instead.
-- A stamped envelope's nonce needs keeping only past the ±30 s window (pruned after 2 minutes), but a seed-form
-- envelope (CONTRACT.md "Cluster wire format": payload = the serialized request, no stamp) has only its signature as
-- a nonce, and that stays usable for as long as the node token is: its record is kept until keep_until. NULL: the
-- 2 minutes of a stamped envelope.
ALTER TABLE cluster_seen_nonces ADD COLUMN keep_until TIMESTAMPTZ;
