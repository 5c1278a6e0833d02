#!/usr/bin/env bash
# Build a01gym's two images on this machine, with no image registry (`make images`):
#
#   1. a local Python base image, a01gym/python-base:bookworm-<recipe>: Debian bookworm from
#      Debian's archive by debootstrap (its python3 is 3.11), imported into the engine. Built
#      once per recipe (suite, packages, mirror, CA bundle): the engine's own store is the cache.
#   2. a01gym/sandbox:<version> (sandbox-image/Dockerfile) and a01gym/a01gym:<version>
#      (Dockerfile), from the repository's own Dockerfiles, unchanged: the base is passed as
#      their PYTHON_IMAGE build argument (real users keep the public python:3.11-slim-bookworm).
#
# Package installs inside the builds reach PyPI the way the host does: the base image carries
# the host's CA bundle (the one pip is configured with) as its system bundle and sets PIP_CERT
# to it; builds use the host's network (`--network host`, no NAT). The classic builder is used
# (DOCKER_BUILDKIT=0): BuildKit would fetch the `# syntax=` frontend image from a registry.
#
# It starts `dockerd` if no engine answers, and stops only the one it started. Prints the image
# ids and sizes on stdout; progress goes to stderr.
#
# --train: also build a01gym/a01gym-train:<version> (EXTRAS=k8s,eval,train: torch, TRL, PEFT;
# 6.7 GB, ~4 min here), the image the chart's GRPO Job runs (tools/real_node_grpo.py).
#
# --public-base: also tag the local base as python:3.11-slim-bookworm, if the engine has no
# image of that name, so a build that passes no PYTHON_IMAGE finds it (`openenv validate .`
# builds deploy/openenv/Dockerfile that way). It stands in for the public image on this
# engine only; it is not that image.
#
# Env: A01GYM_DEBIAN_MIRROR (default http://deb.debian.org/debian),
#      A01GYM_CA_BUNDLE (default: pip's configured `cert`, else the system bundle),
#      A01GYM_IMAGES_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/a01gym/images: engine log).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/pyproject.toml" | head -1)"
SUITE=bookworm
PACKAGES=python3,python3-venv,python-is-python3,ca-certificates,passwd
MIRROR="${A01GYM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${A01GYM_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/a01gym/images}"
mkdir -p "$CACHE"

log() { echo "images: $*" >&2; }
die() { log "$*"; exit 1; }

ca_bundle() {
    local configured="${A01GYM_CA_BUNDLE:-${PIP_CERT:-}}"
    if [ -z "$configured" ] && command -v pip3 >/dev/null; then
        configured="$(pip3 config get global.cert 2>/dev/null || true)"
    fi
    echo "${configured:-/etc/ssl/certs/ca-certificates.crt}"
}

STARTED_PID=""
stop_started_engine() {
    if [ -n "$STARTED_PID" ]; then
        log "stopping the dockerd this script started (pid $STARTED_PID)"
        kill "$STARTED_PID" 2>/dev/null || true
        wait "$STARTED_PID" 2>/dev/null || true
    fi
}
trap stop_started_engine EXIT

ensure_engine() {
    command -v docker >/dev/null || die "no docker client: apt-get install docker.io"
    if docker info >/dev/null 2>&1; then
        return
    fi
    command -v dockerd >/dev/null || die "no Docker engine: apt-get install docker.io"
    log "starting dockerd (log: $CACHE/dockerd.log)"
    dockerd >"$CACHE/dockerd.log" 2>&1 &
    STARTED_PID=$!
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && return
        kill -0 "$STARTED_PID" 2>/dev/null || die "dockerd exited: $(tail -5 "$CACHE/dockerd.log")"
        sleep 0.5
    done
    die "dockerd did not answer in 30 s: $(tail -5 "$CACHE/dockerd.log")"
}

base_image() {
    local ca recipe tag rootfs
    ca="$(ca_bundle)"
    [ -r "$ca" ] || die "CA bundle $ca not readable (set A01GYM_CA_BUNDLE)"
    recipe="$(printf '%s\n' "$SUITE" "$PACKAGES" "$MIRROR" "$(sha256sum <"$ca")" "v1" \
        | sha256sum | cut -c1-12)"
    tag="a01gym/python-base:$SUITE-$recipe"
    if docker image inspect "$tag" >/dev/null 2>&1; then
        echo "$tag"
        return
    fi
    command -v debootstrap >/dev/null || die "no debootstrap: apt-get install debootstrap"
    rootfs="$(mktemp -d /var/tmp/a01gym-rootfs.XXXXXX)"
    log "debootstrap $SUITE from $MIRROR into $rootfs (a minute or two)"
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" \
        >"$CACHE/debootstrap.log" 2>&1; then
        rm -rf "$rootfs"
        die "debootstrap failed: $(tail -5 "$CACHE/debootstrap.log")"
    fi
    cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    log "importing $tag"
    tar -C "$rootfs" -c . | docker import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        --change 'CMD ["python3"]' \
        - "$tag" >&2
    rm -rf "$rootfs"
    echo "$tag"
}

# A rebuild moves a tag to a new image and leaves the old one dangling, and the classic builder
# leaves each build stage as an untagged image: ~2 GB per `make test` for the two images, which
# filled a machine's disk over a few days. So the build stage is tagged too (<repo>-build:<tag>,
# the final build reuses it from the layer cache), and an image a tag moved off is removed unless
# something still uses it.
build_tag() {
    local tag="$1" replaced
    shift
    replaced="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
    DOCKER_BUILDKIT=0 docker build --quiet --network host "$@" --tag "$tag" "$ROOT" >&2
    if [ -n "$replaced" ] && [ "$replaced" != "$(docker image inspect --format '{{.Id}}' "$tag")" ] \
        && [ -z "$(docker image inspect --format '{{join .RepoTags " "}}' "$replaced")" ]; then
        docker image rm "$replaced" >/dev/null 2>&1 || log "kept $replaced, which $tag replaced: in use"
    fi
}

build() {
    local tag="$1" dockerfile="$2" base="$3"
    shift 3
    log "building $tag from $dockerfile"
    set -- --build-arg "PYTHON_IMAGE=$base" "$@" --file "$ROOT/$dockerfile"
    build_tag "${tag%:*}-build:${tag##*:}" "$@" --target build
    build_tag "$tag" "$@"
}

PUBLIC_BASE=""
TRAIN=""
for arg in "$@"; do
    case "$arg" in
        --public-base) PUBLIC_BASE="python:3.11-slim-bookworm" ;;
        --train) TRAIN="a01gym/a01gym-train:$VERSION" ;;
        *) die "unknown argument $arg (see the header of $0)" ;;
    esac
done

ensure_engine
BASE="$(base_image)"
if [ -n "$PUBLIC_BASE" ] && ! docker image inspect "$PUBLIC_BASE" >/dev/null 2>&1; then
    log "tagging $BASE as $PUBLIC_BASE (a local stand-in for the public image)"
    docker tag "$BASE" "$PUBLIC_BASE"
fi
build "a01gym/sandbox:$VERSION" sandbox-image/Dockerfile "$BASE"
build "a01gym/a01gym:$VERSION" Dockerfile "$BASE"
if [ -n "$TRAIN" ]; then
    build "$TRAIN" Dockerfile "$BASE" --build-arg EXTRAS=k8s,eval,train
fi
for tag in "$BASE" "a01gym/sandbox:$VERSION" "a01gym/a01gym:$VERSION" $TRAIN; do
    docker image inspect --format "$tag {{.Id}} {{.Size}}" "$tag"
done
