#!/usr/bin/env bash
# Builds the control-plane binaries the tests and the local cluster run
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, and
# the kubelet of the real node) from
# the Go module proxy into a cache outside the repository. Release binaries
# cannot be downloaded on our machines, so everything comes from Go modules.
#
# Idempotent: a binary that is already in the cache is not rebuilt.
# Prints the cache folder (usable as KUBEBUILDER_ASSETS) on its last line.
#
# Environment:
#   KUBECTL_SCHED_CACHE  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/kubectl-sched)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.5}"
KWOK_VERSION="${KWOK_VERSION:-0.8.0}"

CACHE="${KUBECTL_SCHED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-sched}"
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
WORK="$CACHE/build"
mkdir -p "$BIN" "$WORK"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
have() { [[ -x "$BIN/$1" ]]; }

# A wrapper module per component keeps the build out of our go.mod.
build_etcd() {
  have etcd && { log "etcd $ETCD_VERSION: cached"; return; }
  log "etcd $ETCD_VERSION: building (about a minute on 2 cores)..."
  local d="$WORK/etcd-$ETCD_VERSION"
  mkdir -p "$d"
  cat >"$d/go.mod" <<EOF
module buildetcd

go 1.26

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
EOF
  cat >"$d/tools.go" <<'EOF'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
EOF
  (cd "$d" && GOFLAGS=-mod=mod go mod tidy >/dev/null && go build -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "etcd: done"
}

build_kube() {
  local missing=()
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    have "$b" || missing+=("$b")
  done
  if ((${#missing[@]} == 0)); then log "kubernetes $K8S_VERSION: cached"; return; fi
  log "kubernetes $K8S_VERSION: building ${missing[*]} (5-10 minutes cold on 2 cores)..."
  local d="$WORK/kubernetes-$K8S_VERSION"
  mkdir -p "$d"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with ./staging paths; a dependent module must pin each to the release.
  local gomod
  gomod=$(cd "$d" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local minor="0.${K8S_VERSION#1.}"
  {
    printf 'module buildkube\n\ngo 1.26\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 v'"$minor"'#p' "$gomod"
    printf ')\n'
  } >"$d/go.mod"
  cat >"$d/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOF
  (cd "$d" && GOFLAGS=-mod=mod go mod tidy >/dev/null)
  # Without them the binaries report v0.0.0-master (kubectl get nodes).
  local pkg=k8s.io/component-base/version
  local version_ldflags="-X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*} -X $pkg.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $pkg.gitTreeState=clean"
  for b in "${missing[@]}"; do
    log "  go build $b"
    (cd "$d" && go build -ldflags "$version_ldflags" -o "$BIN/$b.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$BIN/$b.tmp" "$BIN/$b"
  done
  log "kubernetes: done"
}

build_kwok() {
  have kwok && { log "kwok $KWOK_VERSION: cached"; return; }
  log "kwok $KWOK_VERSION: building..."
  GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  log "kwok: done"
}

build_etcd
build_kube
build_kwok
echo "$BIN"
