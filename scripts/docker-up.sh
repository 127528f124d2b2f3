#!/bin/sh
# docker-up.sh: make sure a Docker daemon answers on this machine.
# Installs Debian's docker.io when dockerd is missing, starts dockerd without
# a bridge network and without iptables (containers get "none" or the host's
# loopback, nothing else), waits for it, and prints the server version.
# Idempotent: a daemon that already answers is left alone; a stale pid file
# left by a killed daemon is removed before starting.
set -eu

LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
PIDFILE=/var/run/docker.pid
WAIT=${DOCKERD_WAIT:-60}

answers() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
	docker version --format 'docker server {{.Server.Version}} (API {{.Server.APIVersion}}) already running'
	exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
	echo "dockerd missing: installing docker.io" >&2
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io
fi

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
docker version --format 'docker server {{.Server.Version}} (API {{.Server.APIVersion}})'
