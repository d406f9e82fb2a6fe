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
# etcd and kwok build beside Kubernetes, and Kubernetes' binaries in one
# go build, so downloads, links and compiles overlap and no core idles.
# It says what is left and about how long, from the CPU each part took
# cold (docs/contributors/testing.md).
#
# Environment:
#   KUBECTL_SCHED_CACHE  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/kubectl-sched)
#   KUBELET=false        leave the kubelet out: only the real node runs it
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

KUBE=(kube-apiserver kube-controller-manager kube-scheduler)
[[ "${KUBELET:-true}" == false ]] || KUBE+=(kubelet)

# CPU seconds each part takes from an empty Go cache (modules downloaded),
# from the wall times on two idle cores: kube-apiserver,
# kube-controller-manager and kube-scheduler 269 s, the kubelet 16 s more,
# etcd 36 s, kwok 69 s.
declare -A CPU_SECONDS=([kubernetes]=540 [kubelet]=30 [etcd]=70 [kwok]=130)
CORES=$(nproc 2>/dev/null || echo 2)
# estimate PARTS...: about how long PARTS take on this machine's cores.
estimate() {
  local s=0 p
  for p in "$@"; do s=$((s + CPU_SECONDS[$p])); done
  s=$((s / CORES))
  if ((s >= 90)); then echo "about $(((s + 30) / 60)) minutes"; else echo "about $s s"; fi
}

# progress NAME PARTS...: every minute, how long NAME has been building and
# about how long is left of PARTS' estimate.
progress() {
  local name=$1 total=0 p elapsed=0
  shift
  for p in "$@"; do total=$((total + CPU_SECONDS[$p])); done
  total=$((total / CORES))
  # The sleep is killed with this loop: an orphan would hold the script's
  # output open after it ends, and a reader waits for that to close.
  local sl=
  trap 'kill $sl 2>/dev/null; exit 0' TERM
  while true; do
    sleep 60 &
    sl=$!
    wait "$sl"
    elapsed=$((elapsed + 60))
    if ((elapsed < total)); then
      log "$name: building for $((elapsed / 60)) min, about $(((total - elapsed + 30) / 60)) min left"
    else
      log "$name: building for $((elapsed / 60)) min, longer than on an idle machine (the estimate was $(((total + 30) / 60)) min)"
    fi
  done
}

# A wrapper module per component keeps the build out of our go.mod.
build_etcd() {
  have etcd && { log "etcd $ETCD_VERSION: cached"; return; }
  log "etcd $ETCD_VERSION: building..."
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
  (cd "$d" && GOFLAGS=-mod=mod go mod tidy >/dev/null && go build -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "etcd: done"
}

build_kube() {
  local missing=()
  for b in "${KUBE[@]}"; do
    have "$b" || missing+=("$b")
  done
  if ((${#missing[@]} == 0)); then log "kubernetes $K8S_VERSION: cached"; return; fi
  log "kubernetes $K8S_VERSION: building ${missing[*]} in one go build..."
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
  # Without the -X flags the binaries report v0.0.0-master (kubectl get
  # nodes). -s -w (no symbol table, no DWARF) links kube-apiserver in 7.7 s
  # of CPU instead of 12.7, into 106 MB instead of 150.
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*} -X $pkg.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $pkg.gitTreeState=clean"
  # One go build: one binary links while the next one's packages compile.
  local out="$BIN/.kube-build" pkgs=() b
  rm -rf "$out"
  mkdir -p "$out"
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  # A line a minute with what is left, as this is the long part.
  local parts=(kubernetes)
  [[ " ${missing[*]} " != *" kubelet "* ]] || parts+=(kubelet)
  progress "kubernetes" "${parts[@]}" &
  local ticker=$!
  local rc=0
  (cd "$d" && go build -ldflags "$ldflags" -o "$out/" "${pkgs[@]}") || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  ((rc == 0)) || return "$rc"
  for b in "${missing[@]}"; do mv "$out/$b" "$BIN/$b"; done
  rmdir "$out"
  log "kubernetes: done"
}

build_kwok() {
  have kwok && { log "kwok $KWOK_VERSION: cached"; return; }
  log "kwok $KWOK_VERSION: building..."
  GOBIN="$BIN" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  log "kwok: done"
}

todo=()
have etcd || todo+=(etcd)
for b in "${KUBE[@]}"; do
  [[ $b == kubelet ]] && continue
  have "$b" || { todo+=(kubernetes); break; }
done
[[ " ${KUBE[*]} " != *" kubelet "* ]] || have kubelet || todo+=(kubelet)
have kwok || todo+=(kwok)
if ((${#todo[@]} > 0)); then
  log "to build: ${todo[*]}; $(estimate "${todo[@]}") on $CORES cores from an empty Go cache (less with a warm one)"
fi

# etcd and kwok in the background, Kubernetes here; a failure of either
# job fails the script (wait returns its status).
build_etcd &
etcd_job=$!
build_kwok &
kwok_job=$!
build_kube
left=()
kill -0 "$etcd_job" 2>/dev/null && ! have etcd && left+=(etcd)
kill -0 "$kwok_job" 2>/dev/null && ! have kwok && left+=(kwok)
((${#left[@]} == 0)) || log "waiting for ${left[*]} (at most $(estimate "${left[@]}"))"
wait "$etcd_job"
wait "$kwok_job"
echo "$BIN"
