# orch: one image for every role (controller, worker, hybrid); the role comes from the node config or ORCH_ROLE.
#   docker build -t orch:latest .        (or podman build; docs/DEPLOY.md)
#   docker compose -f docker-compose.cluster.yml up
# BASE_IMAGE: any Debian bookworm image with Node 20 at /usr/local/bin/node and a `node` user (uid 1000). Where no
# registry is reachable, scripts/build-base-image.sh makes one from Debian's packages and this machine's Node and
# tags it localhost/node:20-bookworm-slim (pass --build-arg BASE_IMAGE=localhost/node:20-bookworm-slim).
ARG BASE_IMAGE=node:20-bookworm-slim

# ---- build: compile src/ to dist/ (scripts/build.mjs); needs the dev dependencies (TypeScript, @types) -----------
# Optional dependencies are installed here: esbuild's binary for this platform is one, and without it the build
# leaves out dist/bundle/ and the image's node loads ~1,600 files one by one at every start (issue 15). Install
# scripts stay off (nothing here needs a native addon built).
FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# BUILD_FLAGS: empty (the default) type-checks while compiling. `npm test`'s image smoke test passes --no-check (emit
# only, the same JavaScript): its own checks typechecked these sources minutes before (issue 15: the suite's time).
ARG BUILD_FLAGS=
RUN node scripts/build.mjs $BUILD_FLAGS

# ---- runtime: production dependencies, dist/, the dashboard's ui/dist; no TypeScript, no sources ------------------
FROM ${BASE_IMAGE}
# bubblewrap: sandboxed `process` isolation; git: orch.git.* tools; ca-certificates: LLM providers over TLS; tini:
# PID 1 that forwards signals and reaps. A base image that already has them (build-base-image.sh) needs no network.
RUN if command -v bwrap && command -v git && command -v tini && [ -f /etc/ssl/certs/ca-certificates.crt ]; then :; else \
      apt-get update \
      && apt-get install -y --no-install-recommends bubblewrap git ca-certificates tini \
      && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app
# Dependencies first (cached while only sources change).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY proto ./proto
COPY scripts/prime-pglite-template.mjs ./scripts/
COPY --from=build /app/dist ./dist
# The live dashboard (GET /ui) is served from ui/dist (committed, built by `npm run build:ui`).
COPY ui/dist ./ui/dist
# The PGlite template (npm's prepare, skipped above): a lone `orch up` without a database starts fast.
RUN node scripts/prime-pglite-template.mjs && mkdir -p /var/lib/orch && chown node:node /var/lib/orch

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
