package testenv

import (
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry serves an in-memory OCI registry (go-containerregistry's) on a
// loopback port until the test ends and returns its host:port. Plain
// HTTP, which go-containerregistry's clients use for loopback addresses.
func Registry(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}
