package fileoutputs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// frame is what the sidecar writes for files in a fresh directory.
func frame(t *testing.T, files map[string]string, maxFiles, maxBytes int) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the SIGTERM, already sent
	if err := Serve(ctx, dir, maxFiles, maxBytes, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("größe ${x} \n", 100<<10/13) // past several base64 lines
	cases := map[string]struct {
		files map[string]string
		want  map[string]string
	}{
		"no files":       {files: nil, want: nil},
		"one empty file": {files: map[string]string{"done": ""}, want: map[string]string{"done": ""}},
		"a 100 KiB file and a list": {
			files: map[string]string{"report": big, "items": `["a","b","c"]`},
			want:  map[string]string{"report": big, "items": `["a","b","c"]`},
		},
		"exactly the bound": {
			files: map[string]string{"a": strings.Repeat("x", MaxBytes-1), "b": "y"},
			want:  map[string]string{"a": strings.Repeat("x", MaxBytes-1), "b": "y"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := frame(t, tc.files, MaxFiles, MaxBytes)
			if len(log) > StreamBytes(MaxBytes) {
				t.Errorf("frame is %d bytes, past StreamBytes %d", len(log), StreamBytes(MaxBytes))
			}
			got, ferr := Read(log, MaxFiles, MaxBytes)
			if ferr != nil {
				t.Fatalf("Read: %s: %s", ferr.Reason, ferr.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			for _, line := range bytes.Split(log, []byte("\n")) {
				if len(line) > 16<<10 {
					t.Fatalf("a line of %d bytes: the kubelet would split it", len(line))
				}
			}
		})
	}
}

// The sidecar refuses what it should not send, and says so in the frame.
func TestCollectRefuses(t *testing.T) {
	cases := map[string]struct {
		setup      func(t *testing.T, dir string)
		maxBytes   int
		maxFiles   int
		wantReason string
		wantIn     string
	}{
		"past the tier's bytes": {
			setup: func(t *testing.T, dir string) {
				write(t, dir, "a", strings.Repeat("x", 600))
				write(t, dir, "b", strings.Repeat("x", 600))
			},
			maxBytes:   1000,
			wantReason: v1alpha1.ReasonOutputsTruncated, wantIn: "more than 1000 bytes",
		},
		"too many files": {
			setup: func(t *testing.T, dir string) {
				write(t, dir, "a", "1")
				write(t, dir, "b", "2")
				write(t, dir, "c", "3")
			},
			maxFiles:   2,
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "more than 2 files",
		},
		"a name that is no key": {
			setup:      func(t *testing.T, dir string) { write(t, dir, "1st", "x") },
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "rename the file",
		},
		"a subdirectory": {
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "sub in the output directory ", /* dir follows */
		},
		"a symbolic link out of the directory": {
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink("/etc/hostname", filepath.Join(dir, "token")); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "a symbolic link",
		},
		"binary bytes": {
			setup:      func(t *testing.T, dir string) { write(t, dir, "bin", "ok\xff") },
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "offset 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			maxBytes, maxFiles := cmpOr(tc.maxBytes, MaxBytes), cmpOr(tc.maxFiles, MaxFiles)
			var out bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := Serve(ctx, dir, maxFiles, maxBytes, &out); err != nil {
				t.Fatal(err)
			}
			got, ferr := Read(out.Bytes(), maxFiles, maxBytes)
			if ferr == nil {
				t.Fatalf("Read gave outputs %v, want a refusal", got)
			}
			if ferr.Reason != tc.wantReason || !strings.Contains(ferr.Message, tc.wantIn) {
				t.Errorf("refusal %s: %q; want %s containing %q", ferr.Reason, ferr.Message, tc.wantReason, tc.wantIn)
			}
		})
	}
}

func TestMissingDirectoryIsNoOutputs(t *testing.T) {
	files, ferr := Collect(filepath.Join(t.TempDir(), "never-made"), MaxFiles, MaxBytes)
	if files != nil || ferr != nil {
		t.Fatalf("Collect = %v, %v; want no files and no error", files, ferr)
	}
}

// The operator trusts nothing in the log: anything in the pod could have
// written it, and a stopped sidecar leaves it cut.
func TestReadRefuses(t *testing.T) {
	good := string(frame(t, map[string]string{"a": strings.Repeat("x", 5000), "b": "hello"}, MaxFiles, MaxBytes))
	cases := map[string]struct {
		log        string
		maxBytes   int
		wantReason string
		wantIn     string
	}{
		"empty log":           {log: "", wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "does not start with"},
		"noise before":        {log: "hello\n" + good, wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "does not start with"},
		"cut before trailer":  {log: good[:strings.LastIndex(good, "end ")], wantReason: v1alpha1.ReasonOutputsTruncated, wantIn: "before its trailer"},
		"cut within a file":   {log: good[:len(header)+200], wantReason: v1alpha1.ReasonOutputsTruncated, wantIn: "within file a"},
		"a forged byte":       {log: strings.Replace(good, "aGVsbG8=", "aGVsbHA=", 1), wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "does not match its digest"},
		"a forged trailer":    {log: strings.Replace(good, "end 2 5005", "end 1 5005", 1), wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "holds 2 file(s)"},
		"past a lower bound":  {log: good, maxBytes: 4096, wantReason: v1alpha1.ReasonOutputsTruncated, wantIn: "file a (5000 bytes)"},
		"a line after header": {log: header + "\nrm -rf /\n", wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "unexpected line 2"},
		"the sidecar's refusal": {
			log:        header + "\nerror OutputsTruncated the files hold more than 10 bytes\nend 0 0\n",
			wantReason: v1alpha1.ReasonOutputsTruncated, wantIn: "more than 10 bytes",
		},
		"a refusal's reason is one of ours": {
			log:        header + "\nerror Succeeded all fine\nend 0 0\n",
			wantReason: v1alpha1.ReasonOutputsInvalid, wantIn: "all fine",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ferr := Read([]byte(tc.log), MaxFiles, cmpOr(tc.maxBytes, MaxBytes))
			if ferr == nil {
				t.Fatalf("Read gave outputs %v, want a refusal", got)
			}
			if ferr.Reason != tc.wantReason || !strings.Contains(ferr.Message, tc.wantIn) {
				t.Errorf("refusal %s: %q; want %s containing %q", ferr.Reason, ferr.Message, tc.wantReason, tc.wantIn)
			}
		})
	}
}

func TestMainRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{nil, {"--dir", "/out", "--max-bytes", "2000000"}, {"--dir", "/out", "--max-files", "-1"}, {"--nope"}} {
		if code := Main(args); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
	}
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func BenchmarkReadMaxFrame(b *testing.B) {
	files := []File{{Key: "a", Data: bytes.Repeat([]byte("x"), MaxBytes/2)}, {Key: "b", Data: bytes.Repeat([]byte("y"), MaxBytes/2)}}
	var buf bytes.Buffer
	if err := Write(&buf, files, nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, ferr := Read(buf.Bytes(), MaxFiles, MaxBytes); ferr != nil {
			b.Fatal(ferr.Message)
		}
	}
}
