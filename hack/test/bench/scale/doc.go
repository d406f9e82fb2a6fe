// Package scale is the scale benchmark (`make bench-scale`): the simulated
// cluster with 200+ kwok nodes in pools and zones, 100 tenant namespaces
// of two tiers, apps of two services, workflows of three steps that pass
// outputs and standalone tasks, each queued at once, against the same work
// done as bare Jobs (the floor this cluster allows). The operator runs as
// its own process (or two, with leader election), built from this tree and
// authenticated as its service account, so it has only its generated RBAC
// and its memory is its own. The benchmark prints figures and profiles; it
// asserts nothing about them. See docs/contributors/benchmarks.md, section Scale.
package scale
