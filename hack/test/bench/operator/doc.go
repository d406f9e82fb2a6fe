// Package operator measures the operator on the simulated cluster: workflow
// step hand-off latency, fan-out and fan-in (steps side by side, and a
// forEach over 100 items), AgentTask throughput against bare Jobs, and API
// writes per task. The benchmarks print figures; they assert nothing about
// time. Run them with `make bench` (see docs/contributors/benchmarks.md for recorded figures).
package operator
