// Command release builds and pushes the operator image of a release
// (hack/release/image: ko, both platforms, SBOMs) and writes the pinned
// reference to <out>/operator-image.txt. `make release` runs it before
// hack/dist.
//
//	go run ./hack/release -version v0.2.0 -registry ghcr.io/kubectl-sched [-out dist]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-sched/kubectl-sched/hack/release/image"
)

func main() {
	o := image.Options{Dir: "."}
	flag.StringVar(&o.Version, "version", "", "release version (v-prefixed semver)")
	flag.StringVar(&o.Registry, "registry", "", "registry and path to push to, e.g. ghcr.io/kubectl-sched (the image is <registry>/operator)")
	flag.BoolVar(&o.Insecure, "insecure", false, "push over plain HTTP")
	out := flag.String("out", "dist", "folder for operator-image.txt and the SBOMs")
	flag.Parse()
	if err := run(o, *out); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(o image.Options, out string) error {
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse HEAD (run from the repository): %w", err)
	}
	o.Revision = strings.TrimSpace(string(rev))
	if o.Created, err = commitTime(); err != nil {
		return err
	}
	o.SBOMDir = filepath.Join(out, "sbom")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	ref, err := image.Publish(context.Background(), o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "release: pushed %s in %s\n", ref, time.Since(start).Round(time.Second))
	// What `kubectl sched install --image` takes, pinned.
	return os.WriteFile(filepath.Join(out, "operator-image.txt"), []byte(ref.String()+"\n"), 0o644)
}

// commitTime is SOURCE_DATE_EPOCH, else HEAD's commit time: the image's
// creation time, so the same commit gives the same digests.
func commitTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		b, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("git log: %w", err)
		}
		s = strings.TrimSpace(string(b))
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
