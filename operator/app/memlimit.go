package app

import (
	"fmt"
	"strconv"
)

// MemoryLimitEnv holds the container's memory limit in bytes: config/manager
// fills it from limits.memory through the Downward API, so it follows the
// limit however the Deployment is patched.
const MemoryLimitEnv = "MEMORY_LIMIT"

// SoftMemoryLimit is the Go runtime's soft memory limit the operator sets:
// 90% of MEMORY_LIMIT, so that the garbage collector works harder as the
// heap nears the container's limit instead of the process being killed at
// it; the rest is for memory the runtime does not count (the binary's
// pages). ok is false without MEMORY_LIMIT, and when GOMEMLIMIT is set: the
// runtime has read that one already, and it wins.
func SoftMemoryLimit(lookup func(string) (string, bool)) (limit int64, ok bool, err error) {
	if _, set := lookup("GOMEMLIMIT"); set {
		return 0, false, nil
	}
	v, set := lookup(MemoryLimitEnv)
	if !set || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("%s=%q: want the container's memory limit in bytes (a resourceFieldRef to limits.memory)", MemoryLimitEnv, v)
	}
	return n - n/10, true, nil
}
