#!/usr/bin/env bash
# Installs what the local cluster's real node needs from Debian's packages,
# when missing: containerd, runc, CNI plugins (bridge, host-local, loopback,
# portmap), a static busybox (the node's images are built from it) and
# iptables. The kubelet itself is built from Go modules by
# hack/build-control-plane.sh.
#
# Needs root and apt-get; elsewhere it says so and exits 0, and the real
# node's tests skip with that reason (unless REQUIRE_REAL_NODE is set).
set -euo pipefail

need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || need+=(containernetworking-plugins)
[[ -x /bin/busybox ]] || need+=(busybox-static)
command -v iptables >/dev/null || need+=(iptables)

if ((${#need[@]} == 0)); then
  echo "[install-node-packages] all present" >&2
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "[install-node-packages] missing ${need[*]}, and this is not root with apt-get: the real node will not start" >&2
  exit 0
fi
echo "[install-node-packages] installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
