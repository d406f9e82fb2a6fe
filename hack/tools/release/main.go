// Command release builds and pushes the operator image of a release
// (release/image: ko, both platforms, SBOMs) and writes the pinned
// reference to <out>/operator-image.txt. `make release` runs it before
// hack/dist, from this module (go -C hack/tools run ./release), so ko's
// dependencies stay out of the product's go.mod; the operator itself is
// built with the product's go.mod, in -root.
//
//	go -C hack/tools run ./release -version v0.2.0 -registry ghcr.io/kubectl-sched [-out dist]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-sched/kubectl-sched/hack/tools/release/image"
)

func main() {
	var o image.Options
	flag.StringVar(&o.Version, "version", "", "release version (v-prefixed semver)")
	flag.StringVar(&o.Registry, "registry", "", "registry and path to push to, e.g. ghcr.io/kubectl-sched (the image is <registry>/operator)")
	flag.BoolVar(&o.Insecure, "insecure", false, "push over plain HTTP")
	flag.StringVar(&o.Dir, "root", "", "the repository's root, whose operator is built (default: git's top level)")
	out := flag.String("out", "dist", "folder for operator-image.txt and the SBOMs; a relative one is under -root")
	platforms := flag.String("platforms", strings.Join(image.Platforms, ","), "comma-separated platforms to build, of "+strings.Join(image.Platforms, ", "))
	flag.Parse()
	if err := run(o, *out, *platforms); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(o image.Options, out, platforms string) error {
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag (-help lists them)", flag.Args())
	}
	for _, p := range strings.Split(platforms, ",") {
		if !slices.Contains(image.Platforms, p) {
			return fmt.Errorf("platform %q is not one the operator image has: -platforms takes some of %s", p, strings.Join(image.Platforms, ","))
		}
		o.Platforms = append(o.Platforms, p)
	}
	if o.Dir == "" {
		top, err := git("", "rev-parse", "--show-toplevel")
		if err != nil {
			return fmt.Errorf("%w (run inside the repository, or give -root)", err)
		}
		o.Dir = top
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(o.Dir, out)
	}
	var err error
	if o.Revision, err = git(o.Dir, "rev-parse", "HEAD"); err != nil {
		return err
	}
	if o.Created, err = commitTime(o.Dir); err != nil {
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
func commitTime(dir string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = git(dir, "log", "-1", "--format=%ct"); err != nil {
			return time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// git runs git in dir ("" for the working directory) and returns its
// trimmed output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
