package argo

import (
	"flag"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestMain runs nothing unless benchmarks run, so `go test ./...` pays
// nothing for this package; the benchmark starts its own clusters. The
// same binary, started again by the benchmark with emulatorKubeconfig
// set, is the executor emulation (emulator_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(emulatorKubeconfig) != "" {
		os.Exit(runEmulator())
	}
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
