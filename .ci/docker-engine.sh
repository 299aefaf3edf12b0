#!/usr/bin/env bash
# Makes sure a Docker engine answers on the default socket: installs docker.io when `dockerd` is
# missing and starts the daemon in the background (no bridge, no iptables: containers run with
# network mode none or host). Idempotent and quick when the engine already answers. Used by
# .ci/run and by the executor-docker tests (test/engine.ts); needs root.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "== installing the Docker engine (docker.io)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -q docker.io >&2
fi

# Another caller may have started it meanwhile.
if ! docker info >/dev/null 2>&1; then
  if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "== starting dockerd" >&2
    log="${DOCKERD_LOG:-/var/log/dockerd.log}"
    nohup dockerd --bridge=none --iptables=false --ip-masq=false >>"$log" 2>&1 </dev/null &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi

if ! docker info >/dev/null 2>&1; then
  echo "the Docker engine does not answer (see ${DOCKERD_LOG:-/var/log/dockerd.log})" >&2
  exit 1
fi
