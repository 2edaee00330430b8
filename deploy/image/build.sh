#!/usr/bin/env bash
# Builds the jobvisor image with podman from the Dockerfile at the repository root,
# making the local base images first if they are missing (deploy/image/make-base.sh).
#
#   deploy/image/build.sh                 → localhost/jobvisor:<package.json version>
#   IMAGE=registry.example/jobvisor:1 deploy/image/build.sh
#
# Prints the image name and its size. Needs root and podman (apt-get install podman).
set -euo pipefail

cd "$(dirname "$0")/../.."
PODMAN=${PODMAN:-podman}
VERSION=$(node -p 'require("./package.json").version')
IMAGE=${IMAGE:-localhost/jobvisor:$VERSION}

deploy/image/make-base.sh

args=(build --format docker --layers --tag "$IMAGE" --file Dockerfile)
# chroot isolation: RUN steps need no OCI runtime or cgroup setup, so builds work
# inside containers and on hosts whose cgroup layout crun rejects. It implies the
# host network, which npm ci needs to reach the registry.
args+=(--isolation chroot --network host)
# npm inside the build trusts what npm here trusts (a registry behind a TLS-inspecting
# proxy): NODE_EXTRA_CA_CERTS, else npm's cafile, else the system CA bundle.
ca=${NODE_EXTRA_CA_CERTS:-}
[[ -n $ca && -f $ca ]] || ca=$(npm config get cafile 2>/dev/null || true)
[[ -n $ca && $ca != null && -f $ca ]] || ca=/etc/ssl/certs/ca-certificates.crt
if [[ -f $ca ]]; then
  args+=(--secret "id=npm_ca,src=$ca")
fi

started=$SECONDS
"$PODMAN" "${args[@]}" . >&2
echo "[build] $IMAGE built in $((SECONDS - started)) s" >&2
"$PODMAN" image inspect --format '{{.Size}}' "$IMAGE" \
  | awk -v image="$IMAGE" '{ printf "%s %.1f MB\n", image, $1 / 1000000 }'
