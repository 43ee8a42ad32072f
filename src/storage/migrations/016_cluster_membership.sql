-- 016: cluster membership (docs/CLUSTER.md). Never edit once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.

-- What a member proved and where it stands: the Ed25519 key its node id is pinned to (base64 of the raw 32 bytes),
-- the token session (JWT id) currently allowed to speak for it, the registration (peer id), a drain request and
-- the commands waiting for its next heartbeat response (a JSON array of NodeCommand objects, NULL when none).
ALTER TABLE cluster_nodes ADD COLUMN public_key TEXT;
ALTER TABLE cluster_nodes ADD COLUMN session_id TEXT;
ALTER TABLE cluster_nodes ADD COLUMN peer_id TEXT;
ALTER TABLE cluster_nodes ADD COLUMN drain_requested_at TIMESTAMPTZ;
ALTER TABLE cluster_nodes ADD COLUMN drain_reason TEXT;
ALTER TABLE cluster_nodes ADD COLUMN commands JSONB;
ALTER TABLE cluster_nodes ADD COLUMN applied_config_hash TEXT;

-- One row per AttestNode: the nonce a node must sign with the key it presented. Single use (used_at), short-lived.
CREATE TABLE cluster_challenges (
  challenge_id UUID PRIMARY KEY,
  node_id TEXT NOT NULL,
  role TEXT NOT NULL,
  public_key TEXT NOT NULL,
  nonce TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  used_at TIMESTAMPTZ
);
CREATE INDEX cluster_challenges_expiry ON cluster_challenges (expires_at);

-- The RS256 key that signs node security tokens: made once by the first controller that needs it, shared by all.
CREATE TABLE cluster_keys (
  id TEXT PRIMARY KEY,
  alg TEXT NOT NULL,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Envelope nonces already accepted (replay record without Redis); rows older than the freshness window are pruned.
CREATE TABLE cluster_seen_nonces (
  node_id TEXT NOT NULL,
  nonce TEXT NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, nonce)
);
CREATE INDEX cluster_seen_nonces_age ON cluster_seen_nonces (seen_at);

-- The controller-managed sections of the node configuration (SyncConfig), one current row.
CREATE TABLE cluster_config (
  id TEXT PRIMARY KEY,
  config_yaml TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
