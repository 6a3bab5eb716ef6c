# syntax=docker/dockerfile:1
# Build stage: compiles the better-sqlite3 native module (needs python3, make, g++), compiles the
# TypeScript to dist/ (`npm ci` runs the `prepare` script, which is `npm run build`), then drops
# the development packages. The image runs the compiled JavaScript: no TypeScript loader.
FROM node:20-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json ./
# `npm run build` is scripts/build.mjs (esbuild; bundles kysely, openai and zod into dist/).
COPY scripts/build.mjs ./scripts/
COPY src ./src
COPY adapters ./adapters
COPY tools ./tools
# `npm run eval -- --scripted` (a development aid) imports the fake model server from here.
COPY test/fakes/openai/fake-openai.ts ./test/fakes/openai/
RUN npm ci --foreground-scripts --no-audit --no-fund \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

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
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER hermes
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(process.env.SLACK_SIGNING_SECRET&&!process.env.SLACK_APP_TOKEN?1:0))"
# What `npm start` runs, without npm in between (npm holds ~65 MB and does not pass signals on as
# PID 1), with the same V8 heap options (package.json's start script; docs/operations.md). The
# same command runs the bot outside Docker after `npm install`.
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=50", "dist/src/main.js"]
