# syntax=docker/dockerfile:1
# Build stage: compiles the better-sqlite3 native module (needs python3, make, g++) and installs
# production dependencies only. tsx runs the TypeScript sources directly, so there is no build output.
FROM node:20-slim AS deps
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --foreground-scripts --no-audit --no-fund

# Runtime stage: no compilers, a non-root user, state on a volume.
# bubblewrap + python3: the run_code sandbox (docs/files-and-code.md). bwrap needs user namespaces,
# which Docker's default seccomp profile blocks: run with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# (or a seccomp profile allowing unshare/clone with CLONE_NEWUSER). Without them the bot still runs;
# run_code is then not offered and the log says why.
FROM node:20-slim
ENV NODE_ENV=production \
    HERMES_DATA_DIR=/data \
    PORT=3000
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap python3 \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system hermes && useradd --system --gid hermes --home-dir /app hermes \
 && mkdir -p /data && chown hermes:hermes /data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY adapters ./adapters
COPY tools ./tools
USER hermes
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(process.env.SLACK_SIGNING_SECRET&&!process.env.SLACK_APP_TOKEN?1:0))"
CMD ["npm", "start"]
