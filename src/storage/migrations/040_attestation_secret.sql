-- 040: the attestation proof of a process-isolated sandbox. Never edit once committed; append a new file instead.
-- Under process isolation the container id is `process-<execution_id>`, which anyone who knows the execution id can
-- write, so it proves nothing (issue 14). Each sandbox incarnation gets a random secret in its environment
-- (ORCH_SEAL_CONTAINER_ID = `<container_id>:<secret>`); only its SHA-256 (hex) is kept, here, and AttestAgent
-- compares. NULL: no secret was handed in (a docker sandbox, whose engine-made container id is the proof).
ALTER TABLE executions ADD COLUMN attestation_secret_sha256 TEXT;
