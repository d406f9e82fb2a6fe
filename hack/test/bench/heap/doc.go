// Package heap measures the operator's heap on the simulated cluster: per
// cached object with 1,000 two-service UserDeployments, and the growth when
// 10,000 unrelated Deployments and Secrets are added. The benchmark prints
// figures and asserts nothing about them. See docs/contributors/benchmarks.md.
package heap
