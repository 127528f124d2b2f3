#!/bin/sh
# docker-up.sh: make sure a Docker daemon answers on this machine.
# Installs Debian's docker.io when dockerd is missing, starts dockerd without
# a bridge network and without iptables (containers get "none" or the host's
# loopback, nothing else), waits for it, and prints the server version.
# Idempotent: a daemon that already answers is left alone (but for its
# registry mirror, below); a stale pid file left by a killed daemon is
# removed before starting.
#
# Registry mirror: the daemon's registry-mirrors includes
# http://$PROOFGATE_MIRROR (default 127.0.0.1:5391), the tests' stand-in
# for Docker Hub that scripts/mirror-up.sh serves, so `docker pull
# golang:1.26` resolves there as on a GitHub runner. It is merged into
# $DOCKERD_CONFIG (default /etc/docker/daemon.json, other keys kept; written
# to a temporary file and renamed) before dockerd starts; a running daemon
# without it is sent SIGHUP, which makes dockerd reload registry-mirrors
# from that file (checked with docker info): it is never restarted.
set -eu

LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
PIDFILE=/var/run/docker.pid
WAIT=${DOCKERD_WAIT:-60}
CONFIG=${DOCKERD_CONFIG:-/etc/docker/daemon.json}
MIRROR=http://${PROOFGATE_MIRROR:-127.0.0.1:5391}

answers() { docker info >/dev/null 2>&1; }

# configure_mirror merges MIRROR into CONFIG's registry-mirrors (first).
# An unreadable CONFIG is an error, never overwritten.
configure_mirror() {
	if ! command -v jq >/dev/null 2>&1; then
		echo "jq missing: installing jq (to edit $CONFIG)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y jq >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y jq >&2; }
	fi
	cur='{}'
	if [ -f "$CONFIG" ]; then
		cur=$(cat "$CONFIG")
		if printf '%s' "$cur" | jq -e --arg m "$MIRROR" '(."registry-mirrors" // []) | index($m) != null' >/dev/null; then
			return 0
		fi
	fi
	mkdir -p "$(dirname "$CONFIG")"
	printf '%s' "$cur" | jq --arg m "$MIRROR" '."registry-mirrors" = ([$m] + ((."registry-mirrors" // []) - [$m]))' >"$CONFIG.tmp.$$" ||
		{ rm -f "$CONFIG.tmp.$$"; echo "$CONFIG is not valid JSON: fix or remove it" >&2; exit 1; }
	mv "$CONFIG.tmp.$$" "$CONFIG"
	echo "registry mirror $MIRROR written to $CONFIG" >&2
}

mirror_active() { docker info --format '{{range .RegistryConfig.Mirrors}}{{println .}}{{end}}' 2>/dev/null | grep -qxF "$MIRROR/"; }

# reload_mirror makes a running daemon take CONFIG's registry-mirrors.
reload_mirror() {
	mirror_active && return 0
	pid=$(cat "$PIDFILE" 2>/dev/null || pidof dockerd 2>/dev/null || true)
	if [ -z "$pid" ] || ! kill -HUP "$pid"; then
		echo "cannot signal dockerd (pid ${pid:-unknown}) to reload $CONFIG: reload or restart it yourself" >&2
		exit 1
	fi
	i=0
	until mirror_active; do
		i=$((i + 1))
		if [ "$i" -ge 10 ]; then
			echo "dockerd (pid $pid) did not take registry mirror $MIRROR from $CONFIG; last log lines:" >&2
			tail -n 5 "$LOG" >&2 || true
			exit 1
		fi
		sleep 1
	done
	echo "dockerd (pid $pid) reloaded $CONFIG: registry mirror $MIRROR" >&2
}

if command -v docker >/dev/null 2>&1 && answers; then
	configure_mirror
	reload_mirror
	docker version --format 'docker server {{.Server.Version}} (API {{.Server.APIVersion}}) already running'
	exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
	echo "dockerd missing: installing docker.io" >&2
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io
fi
configure_mirror

if [ -f "$PIDFILE" ]; then
	pid=$(cat "$PIDFILE" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/comm" 2>/dev/null; then
		echo "dockerd (pid $pid) is running but not answering yet" >&2
	else
		echo "removing stale $PIDFILE (pid ${pid:-none})" >&2
		rm -f "$PIDFILE"
	fi
fi

if [ ! -f "$PIDFILE" ]; then
	# setsid: its own session and process group, so that stopping whatever
	# started it (a test job's process group) does not take the daemon along.
	setsid nohup dockerd --bridge=none --iptables=false >>"$LOG" 2>&1 </dev/null &
	echo "started dockerd (pid $!), log $LOG" >&2
fi

i=0
until answers; do
	i=$((i + 1))
	if [ "$i" -ge "$WAIT" ]; then
		echo "dockerd did not answer within ${WAIT}s; last log lines:" >&2
		tail -n 20 "$LOG" >&2 || true
		exit 1
	fi
	sleep 1
done
mirror_active || { echo "dockerd started without registry mirror $MIRROR (see $CONFIG)" >&2; exit 1; }
docker version --format 'docker server {{.Server.Version}} (API {{.Server.APIVersion}})'
