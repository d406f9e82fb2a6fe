// Command dist cross-builds kubectl-sched, packs each binary with LICENSE
// into the archives krew installs (.tar.gz, .zip on Windows), and writes
// the krew manifest with their sha256, and checksums.txt. Archives are
// byte-for-byte reproducible: fixed times, owners and order. With -update-manifest it
// also pins config/manager's operator image and version label to the
// release, so `kubectl apply -k config/default` installs the release's
// operator, never :latest.
//
//	go run ./hack/dist -version v0.1.0 -out dist [-platforms linux/amd64,...] [-update-manifest]
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	repoURL  = "https://github.com/kubectl-sched/kubectl-sched"
	manifest = "krew/sched.yaml"
)

var allPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"

// epoch is the time every archive entry carries, so builds are reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	version := flag.String("version", "v0.1.0", "release version (a v-prefixed semver)")
	out := flag.String("out", "dist", "output folder")
	platforms := flag.String("platforms", allPlatforms, "comma-separated GOOS/GOARCH list")
	update := flag.Bool("update-manifest", false, "also write the sha256s and version into "+manifest+" and the operator image tag into config/manager")
	flag.Parse()
	if err := run(*version, *out, strings.Split(*platforms, ","), *update); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(version, out string, platforms []string, update bool) error {
	if !strings.HasPrefix(version, "v") {
		return fmt.Errorf("-version %q must start with v", version)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	sums := map[string]string{}
	var checksums []string // sha256sum's format, for the GitHub release
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("platform %q is not GOOS/GOARCH", p)
		}
		bin := "kubectl-sched"
		if goos == "windows" {
			bin += ".exe"
		}
		fmt.Fprintf(os.Stderr, "dist: building %s/%s\n", goos, goarch)
		binPath := filepath.Join(out, "build", goos+"-"+goarch, bin)
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath,
			"-ldflags", "-s -w -buildid= -X github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo.Version="+version, "./plugin")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s/%s: %w", goos, goarch, err)
		}
		binary, err := os.ReadFile(binPath)
		if err != nil {
			return err
		}
		files := []file{{bin, binary, 0o755}, {"LICENSE", license, 0o644}}
		name, data, err := archive(version, goos, goarch, files)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		sums[goos+"/"+goarch] = hex.EncodeToString(sum[:])
		checksums = append(checksums, sums[goos+"/"+goarch]+"  "+name+"\n")
		fmt.Fprintf(os.Stderr, "dist: %s %s\n", sums[goos+"/"+goarch], name)
	}
	sort.Strings(checksums)
	if err := os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(strings.Join(checksums, "")), 0o644); err != nil {
		return err
	}
	m, err := fillManifest(version, sums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "sched.yaml"), m, 0o644); err != nil {
		return err
	}
	if update {
		if err := os.WriteFile(manifest, m, 0o644); err != nil {
			return err
		}
		return pinOperator(".", version)
	}
	return nil
}

// The lines of config/manager that name the operator's version.
var (
	newTagLine       = regexp.MustCompile(`(?m)^(\s*-\s*name:\s*operator\s*\n(?:\s+new\w+:.*\n)*?\s+newTag:\s*).*$`)
	versionLabelLine = regexp.MustCompile(`(?m)^(\s+app\.kubernetes\.io/version:\s*).*$`)
)

// pinOperator writes version as the operator image's tag in
// config/manager/kustomization.yaml and as the Deployment's version label
// in config/manager/manager.yaml, keeping every other byte (comments
// included). config's tests check both match krew/sched.yaml.
func pinOperator(root, version string) error {
	for file, re := range map[string]*regexp.Regexp{
		"config/manager/kustomization.yaml": newTagLine,
		"config/manager/manager.yaml":       versionLabelLine,
	} {
		p := filepath.Join(root, file)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := len(re.FindAllIndex(data, -1)); n != 1 {
			return fmt.Errorf("%s: want one line to pin the operator version on, found %d", file, n)
		}
		out := re.ReplaceAll(data, []byte("${1}"+version))
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type file struct {
	name string
	data []byte
	mode int64
}

// ArchiveName is the release asset for a platform.
func ArchiveName(version, goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-sched_%s_%s_%s%s", version, goos, goarch, ext)
}

func archive(version, goos, goarch string, files []file) (string, []byte, error) {
	name := ArchiveName(version, goos, goarch)
	var buf bytes.Buffer
	if goos == "windows" {
		zw := zip.NewWriter(&buf)
		for _, f := range files {
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
			h.SetMode(os.FileMode(f.mode))
			w, err := zw.CreateHeader(h)
			if err != nil {
				return "", nil, err
			}
			if _, err := w.Write(f.data); err != nil {
				return "", nil, err
			}
		}
		if err := zw.Close(); err != nil {
			return "", nil, err
		}
		return name, buf.Bytes(), nil
	}
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	gz.ModTime = epoch
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return "", nil, err
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.data)); err != nil {
			return "", nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	if err := gz.Close(); err != nil {
		return "", nil, err
	}
	return name, buf.Bytes(), nil
}

// fillManifest sets the version, each platform's uri and sha256 in the
// krew manifest; platforms not built keep what they had.
func fillManifest(version string, sums map[string]string) ([]byte, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("%s has no spec", manifest)
	}
	spec["version"] = version
	platforms, _ := spec["platforms"].([]any)
	for _, p := range platforms {
		pm := p.(map[string]any)
		labels := pm["selector"].(map[string]any)["matchLabels"].(map[string]any)
		key := fmt.Sprintf("%v/%v", labels["os"], labels["arch"])
		pm["uri"] = fmt.Sprintf("%s/releases/download/%s/%s", repoURL, version, ArchiveName(version, fmt.Sprint(labels["os"]), fmt.Sprint(labels["arch"])))
		if sum, ok := sums[key]; ok {
			pm["sha256"] = sum
		}
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated by `make dist` from the release archives; edit the fields, not the sha256s.\n"), out...), nil
}
