-- 004: SEAL (signed envelope attestation layer) sessions. Never edit once committed; append a new file instead.
-- Portable subset (PostgreSQL, PGlite, CockroachDB): ids made by the application, no SERIAL, no triggers.

-- One row per AttestAgent: the ephemeral Ed25519 key an agent container registered for one execution, and the
-- security context its calls are judged by. `status` is active until revoked; the execution's own status is
-- checked on every invoke, so an ended execution makes its sessions useless at once.
CREATE TABLE seal_sessions (
  session_id UUID PRIMARY KEY,
  execution_id UUID NOT NULL,
  agent_id UUID NOT NULL,
  tenant_id TEXT NOT NULL,
  -- base64 of the raw 32-byte Ed25519 public key
  public_key TEXT NOT NULL,
  security_context JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'revoked'))
);
CREATE INDEX seal_sessions_execution ON seal_sessions (execution_id);

-- Every signature accepted in a session (its SHA-256, hex): the signature is the nonce, a second use is refused.
CREATE TABLE seal_seen_signatures (
  session_id UUID NOT NULL,
  signature_hash TEXT NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, signature_hash)
);

-- The key that signs SEAL security tokens (EdDSA JWTs): made once by the first node that needs it, shared by all.
CREATE TABLE seal_keys (
  id TEXT PRIMARY KEY,
  alg TEXT NOT NULL,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
