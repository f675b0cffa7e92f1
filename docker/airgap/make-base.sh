#!/usr/bin/env bash
# A Debian bookworm base image made from Debian packages alone (no registry of images):
# debootstrap's minimal system with Python 3.11, venv and pip, OpenMP's runtime (libgomp1,
# which LightGBM links), the host's CA bundle (so that pip reaches the host's package mirror
# through its proxy or certificate), imported as ${BASE_IMAGE:-panoramia-base:bookworm}.
#   docker/airgap/make-base.sh [MIRROR]   (default: $DEBIAN_MIRROR, else deb.debian.org)
# Needs root (debootstrap), a Docker engine and a Debian mirror; takes ~40 s.
set -euo pipefail
image="${BASE_IMAGE:-panoramia-base:bookworm}"
mirror="${1:-${DEBIAN_MIRROR:-http://deb.debian.org/debian}}"
root="$(mktemp -d /var/tmp/panoramia-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
started=$SECONDS
echo "debootstrap bookworm from $mirror into $root"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates,libgomp1 \
  bookworm "$root" "$mirror" > "$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
rm -f "$root.log" "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' -c 'CMD ["python3"]' - "$image" > /dev/null
echo "$image: $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}') in $((SECONDS - started)) s"
