#!/usr/bin/env bash
# Provision the binaries the Kubernetes integration tests run against:
# a real kube-apiserver and kube-controller-manager (built from the
# k8s.io/kubernetes Go module pinned in tools/envtest/go.mod), etcd (Debian's
# etcd-server package), helm and kubeconform (go install); and, for the real node
# (tests/integration/k8s/node.py, tools/cluster.py), kubelet, kube-scheduler, kube-proxy and
# kubectl from the same module, kube-router (go install) to enforce NetworkPolicy there and
# CoreDNS (go install) for its cluster DNS.
# The node's containerd, runc, CNI plugins and ipset are Debian's (containerd runc
# containernetworking-plugins ipset), installed by .ci/run.
#
# Binaries are cached in ~/.cache/a01gym/envtest/<k8s-version>/bin (outside the clone, so
# CI's fresh clones reuse them) and only the first run pays for the build (~10-45 min on 2
# cores, depending on load). The script prints nothing but the
# bin directory on stdout, so callers can do:
#     export A01GYM_ENVTEST_BIN="$(tools/envtest.sh)"
# Progress goes to stderr.
#
# Env: GO (default: go on PATH, else /usr/local/go/bin/go),
#      A01GYM_ENVTEST_CACHE (default: ${XDG_CACHE_HOME:-$HOME/.cache}/a01gym/envtest),
#      A01GYM_ENVTEST_NO_APT=1 to never apt-get install etcd.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODDIR="$ROOT/tools/envtest"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
HELM_VERSION="v3.22.0"
KUBECONFORM_VERSION="v0.8.0"
KUBE_ROUTER_VERSION="v2.1.0"
COREDNS_VERSION="v1.15.0"
K8S_VERSION="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$MODDIR/go.mod")"
CACHE="${A01GYM_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/a01gym/envtest}"
BIN="$CACHE/$K8S_VERSION/bin"
mkdir -p "$BIN"
# One build at a time: .ci/run starts this script in the background while pip installs the
# venv, and `make test` calls it again; the second call waits here, then finds every binary.
exec 9>"$CACHE/.lock"
flock 9

log() { echo "envtest: $*" >&2; }

[ -x "$GO" ] || { log "no Go toolchain (set GO=)"; exit 1; }
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED=0

build_k8s() {
    local cmd="$1"
    if [ -x "$BIN/$cmd" ]; then
        return
    fi
    log "building $cmd $K8S_VERSION (slow the first time)"
    (
        cd "$MODDIR"
        if [ ! -s go.sum ]; then
            "$GO" mod tidy >&2
        fi
        "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" >&2
    )
    mv "$BIN/$cmd.tmp" "$BIN/$cmd"
}

install_tool() {
    local name="$1" pkg="$2"
    if [ -x "$BIN/$name" ]; then
        return
    fi
    log "installing $pkg"
    GOBIN="$BIN" "$GO" install -trimpath -ldflags "-s -w" "$pkg" >&2
}

ensure_etcd() {
    local etcd
    etcd="$(command -v etcd || true)"
    if [ -z "$etcd" ] && [ -x /usr/bin/etcd ]; then
        etcd=/usr/bin/etcd
    fi
    if [ -z "$etcd" ]; then
        if [ "${A01GYM_ENVTEST_NO_APT:-0}" = "1" ] || [ "$(id -u)" != "0" ]; then
            log "etcd missing: apt-get install etcd-server"
            exit 1
        fi
        log "installing etcd-server (apt)"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >&2
        etcd=/usr/bin/etcd
    fi
    ln -sf "$etcd" "$BIN/etcd"
}

build_k8s kube-apiserver
build_k8s kube-controller-manager
for cmd in kube-scheduler kubelet kube-proxy kubectl; do
    build_k8s "$cmd"
done
install_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
install_tool kubeconform "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
# The real node's NetworkPolicy enforcer (its firewall controller only; needs Debian's ipset).
install_tool kube-router "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
# The real node's cluster DNS.
install_tool coredns "github.com/coredns/coredns@$COREDNS_VERSION"
ensure_etcd
log "ready: $BIN"
echo "$BIN"
