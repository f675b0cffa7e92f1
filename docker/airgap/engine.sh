#!/usr/bin/env bash
# Make sure a Docker engine answers: on a host without one (no systemd, e.g. this project's
# CI machines), install Debian's docker.io, docker-compose and debootstrap when missing and
# start dockerd by hand (no iptables, no default bridge: compose's own networks still work;
# overlay2 storage). Needs root for that; does nothing where `docker info` already answers.
set -euo pipefail
log_dir="${PANORAMIA_DOCKER_LOGS:-/var/log}"
missing=()
command -v dockerd > /dev/null || missing+=(docker.io)
command -v docker-compose > /dev/null || docker compose version > /dev/null 2>&1 \
  || missing+=(docker-compose)
command -v debootstrap > /dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || { echo "engine.sh: needs ${missing[*]} (root installs them)" >&2; exit 1; }
  echo "installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" > "$log_dir/panoramia-apt.log" 2>&1 \
    || { apt-get update -q > /dev/null && apt-get install -y -q "${missing[@]}" \
           > "$log_dir/panoramia-apt.log" 2>&1; }
fi
if docker info > /dev/null 2>&1; then
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "engine.sh: no Docker engine answers (root starts one)" >&2; exit 1; }
echo "starting dockerd (log: $log_dir/panoramia-dockerd.log)"
nohup dockerd --iptables=false --bridge=none --storage-driver=overlay2 \
  > "$log_dir/panoramia-dockerd.log" 2>&1 &
for _ in $(seq 60); do
  docker info > /dev/null 2>&1 && exit 0
  sleep 1
done
echo "engine.sh: dockerd did not answer within 60 s; its log:" >&2
tail -20 "$log_dir/panoramia-dockerd.log" >&2
exit 1
