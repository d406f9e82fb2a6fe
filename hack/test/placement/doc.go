// Package placement checks `kubectl sched placement explain` against
// kube-scheduler on the simulated cluster (hack/cluster): for tasks and
// workflow steps with different placements, explain's nodes before the
// object exists must hold the node the scheduler then picks, and a pod
// explain finds no node for must stay unscheduled. It holds only tests.
package placement
