// Package fairness measures what one tenant's churn costs another: the
// start of tenant B's AgentTasks on an idle cluster, then while tenant A
// changes its apps' environment ten to fifteen times a second through
// `kubectl sched set env`, with the operator's queues and request budget
// fair across namespaces and, for comparison, without. The benchmark
// prints figures and asserts nothing about time. See BENCHMARKS.md.
package fairness
