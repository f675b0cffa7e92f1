#!/usr/bin/env bash
# Build the images on a host that reaches no registry of images (only a Debian mirror and a
# Python package index or mirror): the base from Debian packages (make-base.sh, once), the
# CPU image on it with torch from a local wheel when one is at hand (pip's find-links:
# $PIP_FIND_LINKS, /opt/wheels), else from $TORCH_INDEX_URL, and PostgreSQL + Redis from
# Debian's packages for the compose override. Prints each step's time and the sizes.
#   docker/airgap/build.sh          (from anywhere; PIP_INDEX_URL / TORCH_INDEX_URL honoured)
set -euo pipefail
cd "$(dirname "$0")/../.."
export DOCKER_BUILDKIT=0
base="${BASE_IMAGE:-panoramia-base:bookworm}"
step() { printf '%-44s %4d s\n' "$1" "$(($SECONDS - $2))"; }
started=$SECONDS
if ! docker image inspect "$base" > /dev/null 2>&1; then
  BASE_IMAGE="$base" docker/airgap/make-base.sh
  step "base image $base (debootstrap)" "$started"
fi
for folder in ${PIP_FIND_LINKS:-} /opt/wheels; do
  wheel="$(ls "$folder"/torch-2.13.0*cpu*.whl 2> /dev/null | head -1 || true)"
  if [ -n "$wheel" ]; then
    cp -u "$wheel" docker/wheels/
    echo "torch from $wheel"
    break
  fi
done
arguments=(--network host --build-arg "BASE_IMAGE=$base")
[ -n "${PIP_INDEX_URL:-}" ] && arguments+=(--build-arg "PIP_INDEX_URL=$PIP_INDEX_URL")
[ -n "${TORCH_INDEX_URL:-}" ] && arguments+=(--build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL")
at=$SECONDS
docker build -q "${arguments[@]}" -f docker/Dockerfile -t panoramia-audit:cpu . > /dev/null
step "panoramia-audit:cpu" "$at"
at=$SECONDS
docker build -q "${arguments[@]}" -f docker/airgap/Dockerfile.services \
  -t panoramia-services:bookworm . > /dev/null
step "panoramia-services:bookworm (PostgreSQL, Redis)" "$at"
# (no prune: the build stage's layers are untagged, and they are the next build's cache)
for image in "$base" panoramia-audit:cpu panoramia-services:bookworm; do
  docker image inspect -f '{{.Size}}' "$image" | awk -v i="$image" '{printf "%-44s %.2f GB\n", i, $1/1e9}'
done
step "all images" "$started"
