// Package chaos holds the fault tests: the operator killed with SIGKILL at
// random moments while workflows and tasks run on the simulated cluster,
// then checked for duplicates and lost outputs. `go test ./hack/test/chaos`
// runs the short form (2 workflows of 5 steps, 20 tasks, 6 kills);
// CHAOS_KILLS, CHAOS_SCALE (workflows and tasks times N) and CHAOS_STEPS
// run longer ones (make chaos; see docs/contributors/reliability.md). Under -short (make
// test) the two runs that spend minutes waiting, API server and etcd
// restarts and leader failover, are skipped; make test-faults runs them,
// and CI runs both.
// TestKillsBetweenWrites aims its kills with operator/crashpoint, whose
// points exist only in an operator built with -tags crashpoint, as these
// tests build it.
package chaos
