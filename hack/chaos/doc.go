// Package chaos holds the fault tests: the operator killed with SIGKILL at
// random moments while workflows and tasks run on the simulated cluster,
// then checked for duplicates and lost outputs. `go test ./hack/chaos`
// runs the short form (part of `make test`); CHAOS_KILLS=20 CHAOS_SCALE=5
// runs a longer one.
package chaos
