# orch: one image for every role (controller, worker, hybrid); the role comes from the node config or ORCH_ROLE.
# Build: docker build -t orch:latest .      Run: docker compose -f docker-compose.cluster.yml up
FROM node:20-bookworm-slim

# bubblewrap: sandboxed `process` isolation; git: orch.git.* tools; ca-certificates: LLM providers over TLS.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap git ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first (cached while only sources change). The sources run through tsx: no build step.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund
COPY bin ./bin
COPY proto ./proto
COPY scripts ./scripts
COPY src ./src
COPY tsconfig.json ./
# The PGlite template (npm's postinstall, skipped above): a lone `orch up` without a database starts fast.
RUN npx tsx scripts/prime-pglite-template.ts && mkdir -p /var/lib/orch && chown node:node /var/lib/orch

USER node
ENV NODE_ENV=production \
    ORCH_DATA_DIR=/var/lib/orch \
    ORCH_HTTP_BIND=0.0.0.0
VOLUME ["/var/lib/orch"]
# HTTP API, runtime gRPC, cluster gRPC (NodeClusterService).
EXPOSE 8080 50051 50056
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/orch.js"]
CMD ["up"]
