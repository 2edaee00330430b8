# The jobvisor supervisor image: compiled JavaScript and production dependencies only.
#
# The base images are made on this machine, no registry needed (deploy/image/make-base.sh):
#   localhost/jobvisor-node:24-build  Debian minbase + Node.js 24 + npm   (build stages)
#   localhost/jobvisor-node:24        Debian minbase + Node.js 24         (runtime)
# Build with deploy/image/build.sh, or:
#   podman build --format docker --isolation chroot --network host -t localhost/jobvisor:0.1.0 .
#
# At run time the root filesystem may be read-only: the process writes nothing but
# what the configuration points at (mount /tmp, and a volume for task output).

# npm's download cache is a build cache mount, never part of a layer. The optional
# secret npm_ca is a CA bundle for a registry behind a TLS-inspecting proxy
# (deploy/image/build.sh passes the bundle that npm on the build host trusts).

# Production dependencies only: no TypeScript, no tsx, no embedded PostgreSQL.
# The package's optional peers (sharp and pdfkit for the built-in tasks, the
# OpenTelemetry SDK) are production dependencies of this image: with-peers.mjs
# moves them there, at the lockfile's versions, before npm ci.
# Install scripts are skipped: sharp ships its native binary in a platform package.
FROM localhost/jobvisor-node:24-build AS deps
WORKDIR /app
COPY package.json package-lock.json deploy/image/with-peers.mjs ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    --mount=type=secret,id=npm_ca,target=/run/secrets/npm_ca \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && node with-peers.mjs package.json \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# Compile src/ to dist/ (npm run build = tsc -p tsconfig.build.json). Optional
# dependencies (platform binaries: embedded PostgreSQL, esbuild, libvips) are not
# needed to type-check and emit.
FROM localhost/jobvisor-node:24-build AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    --mount=type=secret,id=npm_ca,target=/run/secrets/npm_ca \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/cjs-types.mjs ./scripts/
COPY src ./src
RUN npm run build

FROM localhost/jobvisor-node:24 AS runtime
# tini (Debian's package, in the base image) is PID 1: it reaps orphaned child processes
# of tasks (which would otherwise stay zombies) and passes SIGTERM on to node.
RUN test -x /usr/bin/tini || { echo 'the base image has no /usr/bin/tini: FORCE=1 deploy/image/make-base.sh' >&2; exit 1; } \
 && groupadd --system --gid 10001 jobvisor \
 && useradd --system --uid 10001 --gid jobvisor --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin jobvisor
WORKDIR /app
ENV NODE_ENV=production \
    TMPDIR=/tmp
# Everything under /app belongs to root and is read-only for the jobvisor user.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY config ./config
USER 10001:10001
EXPOSE 9464
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.METRICS_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, no shell: tini (PID 1) forwards SIGTERM to node, which drains and exits 0.
# Without this image: `docker run --init` / `podman run --init` gives the same.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/jobvisor.js"]
CMD ["start"]
