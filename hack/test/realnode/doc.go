// Package realnode proves kubectl-sched with real containers: its tests run
// on the local cluster's real node (hack/cluster: a kubelet with containerd
// and runc, node pool "real") beside the kwok nodes. Containers really write
// /dev/termination-log, really fail, time out and pull images, and the
// operator itself runs as a pod installed by `kubectl sched install`.
//
// The tests skip, saying why, on a host that cannot run the node (not root,
// or Debian's containerd, runc, containernetworking-plugins and
// busybox-static missing: hack/install-node-packages.sh installs them).
// With REQUIRE_REAL_NODE=1, as .ci/run sets it, they fail instead.
package realnode
