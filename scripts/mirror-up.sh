#!/usr/bin/env bash
# mirror-up.sh: the tests' local stand-in for Docker Hub, and prints its
# address (host:port) on stdout:
#
#   export PROOFGATE_MIRROR="$(bash scripts/mirror-up.sh)" PROOFGATE_REQUIRE_MIRROR=1
#
# 1. Builds internal/registrytest/cmd/mirror (go-containerregistry's
#    pkg/registry with blobs on disk) and starts `mirror serve` on
#    $PROOFGATE_MIRROR (default 127.0.0.1:5391) in the background, unless a
#    registry already answers there (then it is reused).
# 2. Runs `mirror push`: builds the golang and node images from this host's
#    go and node/npm (internal/toolimage) and pushes them as library/golang
#    and library/node, the names under which a pull-through mirror serves
#    Docker Hub's official images. The tags stand in for Docker Hub's and
#    ALL hold the host's toolchain, whatever version the tag names:
#      golang: PROOFGATE_MIRROR_GOLANG_TAGS (default 1.15 ... 1.26 and the host's, e.g. 1.26.8)
#      node:   PROOFGATE_MIRROR_NODE_TAGS   (default 18 20 22 24 and the host's, e.g. 20.20.2)
#    Built images are cached (by a stamp of their inputs) in
#    $PROOFGATE_MIRROR_DIR/cache, blobs kept in $PROOFGATE_MIRROR_DIR/blobs.
# 3. Makes the Docker daemon use it as its registry mirror (scripts/docker-up.sh,
#    which writes registry-mirrors into /etc/docker/daemon.json and reloads a
#    running dockerd with SIGHUP; never restarts it), so that
#    `docker pull golang:1.26` resolves through it as on a GitHub runner.
#    Nothing is pulled from the internet.
#
# Installs Debian's busybox-static when /bin/busybox is missing. Progress
# goes to stderr; stdout is the address.
set -euo pipefail
cd "$(dirname "$0")/.."

addr=${PROOFGATE_MIRROR:-127.0.0.1:5391}
state=${PROOFGATE_MIRROR_DIR:-/var/lib/proofgate-mirror}
bin="$(go env GOPATH)/bin/proofgate-mirror"
mkdir -p "$bin" "$state"

answers() { curl -fs -o /dev/null --max-time 2 "http://$addr/v2/"; }

if [ ! -x /bin/busybox ]; then
  echo "mirror-up: installing busybox-static (the images' /bin/sh)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static >&2; }
fi

stamp=$( (cat go.mod go.sum; cat internal/registrytest/cmd/mirror/*.go internal/toolimage/*.go internal/testimage/*.go) | sha256sum | cut -c1-16)
if [ -x "$bin/mirror" ] && [ "$(cat "$bin/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "mirror-up: mirror already built in $bin" >&2
else
  echo "mirror-up: building mirror into $bin" >&2
  GOFLAGS=-mod=readonly go build -o "$bin/mirror.tmp.$$" ./internal/registrytest/cmd/mirror >&2
  mv "$bin/mirror.tmp.$$" "$bin/mirror"
  echo "$stamp" > "$bin/stamp"
fi

if answers; then
  echo "mirror-up: a registry already answers on $addr: reusing it" >&2
else
  # setsid: its own session, so that stopping the job that started it does
  # not stop the registry the daemon's mirror configuration points at.
  setsid nohup "$bin/mirror" serve -addr "$addr" -dir "$state" >>"$state/serve.log" 2>&1 </dev/null &
  echo "mirror-up: started registry (pid $!) on $addr, log $state/serve.log" >&2
  i=0
  until answers; do
    i=$((i + 1))
    if [ "$i" -ge 30 ]; then
      echo "mirror-up: registry did not answer on $addr within 30s:" >&2
      tail -n 20 "$state/serve.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
fi

"$bin/mirror" push -registry "$addr" -cache "$state/cache" >&2
PROOFGATE_MIRROR=$addr bash scripts/docker-up.sh >&2
echo "$addr"
