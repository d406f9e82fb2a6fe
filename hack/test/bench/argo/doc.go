// Package argo is the side-by-side benchmark against Argo Workflows
// (`make bench-argo`, issue 38): the same work run through Argo's
// workflow-controller, as shipped and tuned, and through the kubectl-sched
// operator, each on a fresh simulated cluster of its own, one after the
// other. Argo's controller is built by hack/build-argo.sh outside our
// go.mod. On kwok nodes no container runs, so the writes Argo's executor
// (the pod's wait container) makes are emulated by a process of the
// benchmark's own and counted as Argo's cost. The benchmark prints figures
// and asserts nothing about them; see docs/contributors/benchmarks.md,
// section "Against Argo Workflows".
package argo
