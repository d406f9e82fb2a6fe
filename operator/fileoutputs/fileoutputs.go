// Package fileoutputs carries a task's file outputs from its pod to the
// operator. A task names a directory (spec.outputs.fromDir); each regular
// file directly in it is one output, its name the key. The task's pod has
// a native sidecar (the operator's image, subcommand `outputs`) that waits
// for the task's container to end, then writes the directory to its
// stdout in the frame below, and exits 0. The operator reads that
// container's log (pods/log, limitBytes) where it reads the termination
// message and the kept logs: before it lets the pod go.
//
// The frame is lines of text, so the kubelet's line-oriented log files
// carry it unchanged:
//
//	kubectl-sched-outputs/v1
//	file KEY SIZE SHA256      one per file, in name order, then its bytes
//	BASE64                    as standard base64, chunkBytes a line
//	error MESSAGE             instead of files: why there are none
//	end COUNT TOTAL           the trailer: nothing was cut
//
// A stream without its trailer, a size or digest that does not match, or
// anything past the bounds is refused as a whole: outputs are either all
// there and exact, or the task fails saying why. Never partly.
package fileoutputs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

const (
	// MaxBytes is the most a task's file outputs may hold in all, the
	// bytes of its files: a tier may allow less, never more.
	MaxBytes = v1alpha1.MaxFileOutputBytes
	// MaxFiles is the most files a task's output directory may hold.
	MaxFiles = v1alpha1.MaxFileOutputs

	header = "kubectl-sched-outputs/v1"
	// chunkBytes is how many bytes one base64 line carries (4 KiB as
	// 5,464 characters): well under the kubelet's 16 KiB log line, so no
	// line is ever split in its log file.
	chunkBytes = 4096
)

// StreamBytes is the most a frame holding maxBytes of files may take:
// what the operator asks of the sidecar's log (limitBytes), so a whole
// frame is never cut and a longer log is refused.
func StreamBytes(maxBytes int) int {
	lines := maxBytes/chunkBytes + MaxFiles
	return len(header) + 1 + MaxFiles*(len("file ")+substitution.MaxKeyLength+24+64+3) +
		base64.StdEncoding.EncodedLen(maxBytes) + lines*(1+4) + 64 + 1024
}

// Error says why a task's file outputs are unusable: Reason is
// v1alpha1.ReasonOutputsInvalid or v1alpha1.ReasonOutputsTruncated, and
// Message tells the task's author what to change.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalid(format string, args ...any) *Error {
	return &Error{Reason: v1alpha1.ReasonOutputsInvalid, Message: fmt.Sprintf(format, args...)}
}

// File is one output as the sidecar found it.
type File struct {
	Key  string
	Data []byte
}

// Collect reads the output files of dir: the regular files directly in
// it, in name order, at most maxFiles and maxBytes in all. It reads no
// more of a file than the bounds leave, so a huge file costs the sidecar
// no memory. What is wrong is an *Error for the task's author.
func Collect(dir string, maxFiles, maxBytes int) ([]File, *Error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // the task wrote none
	}
	if err != nil {
		return nil, invalid("cannot read the output directory %s: %v", dir, err)
	}
	var files []File
	total := 0
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			continue // the kubelet's atomic-writer folders, were it ever projected
		}
		if !e.Type().IsRegular() {
			return nil, invalid("%s in the output directory %s is not a regular file (%s); write each output as a file directly in it", name, dir, kind(e.Type()))
		}
		if err := substitution.ValidKey(name); err != nil {
			return nil, invalid("file %s in the output directory %s: output %v; rename the file", name, dir, err)
		}
		if len(files) == maxFiles {
			return nil, invalid("the output directory %s holds more than %d files; write at most %d", dir, maxFiles, maxFiles)
		}
		data, err := readAtMost(filepath.Join(dir, name), maxBytes-total)
		if err != nil {
			return nil, invalid("cannot read output file %s: %v", name, err)
		}
		if total += len(data); total > maxBytes {
			return nil, &Error{Reason: v1alpha1.ReasonOutputsTruncated, Message: fmt.Sprintf(
				"the files in the output directory %s hold more than %d bytes, the most a task's file outputs may hold in its tier: write less, or keep big results in a workspace", dir, maxBytes)}
		}
		if !utf8.Valid(data) {
			return nil, invalid("output file %s is not valid UTF-8 (first bad byte at offset %d); outputs are text: encode binary data (base64) or keep it in a workspace", name, firstInvalid(data))
		}
		files = append(files, File{Key: name, Data: data})
	}
	return files, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "a special file"
	}
}

// readAtMost reads up to limit+1 bytes of path: one more tells a file
// past the limit.
func readAtMost(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max(limit, 0))+1))
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// Write frames files, or the error that stands for them, to w.
func Write(w io.Writer, files []File, ferr *Error) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, header)
	total := 0
	if ferr != nil {
		files = nil
		fmt.Fprintf(bw, "error %s %s\n", ferr.Reason, oneLine(ferr.Message))
	}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		fmt.Fprintf(bw, "file %s %d %s\n", f.Key, len(f.Data), hex.EncodeToString(sum[:]))
		for data := f.Data; len(data) > 0; {
			n := min(len(data), chunkBytes)
			if _, err := bw.WriteString(base64.StdEncoding.EncodeToString(data[:n]) + "\n"); err != nil {
				return err
			}
			data = data[n:]
		}
		total += len(f.Data)
	}
	fmt.Fprintf(bw, "end %d %d\n", len(files), total)
	return bw.Flush()
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// Read parses a frame from the sidecar's log: the outputs, or an *Error
// saying why there are none. maxFiles and maxBytes are the task's bounds,
// checked again here: the log is the pod's to write, and anything in the
// pod may have written it. It holds no more than log and the outputs at
// once: lines are read in place and each file decoded into its string.
func Read(log []byte, maxFiles, maxBytes int) (map[string]string, *Error) {
	// What follows the last newline is no whole line: the log was cut
	// there, or ends with its newline.
	lines := bytes.Split(log, []byte("\n"))
	lines = lines[:len(lines)-1]
	if len(lines) == 0 || string(bytes.TrimSuffix(lines[0], []byte("\r"))) != header {
		return nil, invalid("the outputs sidecar's log does not start with %q: it did not run to its end (was the pod stopped before its grace period ended?) or something else wrote to it", header)
	}
	outs := map[string]string{}
	total := 0
	for i := 1; i < len(lines); i++ {
		line := string(bytes.TrimSuffix(lines[i], []byte("\r")))
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "error":
			reason, msg, _ := strings.Cut(rest, " ")
			if reason != v1alpha1.ReasonOutputsTruncated {
				reason = v1alpha1.ReasonOutputsInvalid
			}
			return nil, &Error{Reason: reason, Message: msg}
		case "file":
			key, data, next, ferr := readFile(lines, i, rest, maxBytes-total)
			if ferr != nil {
				return nil, ferr
			}
			if _, dup := outs[key]; dup {
				return nil, invalid("the outputs sidecar's log names file %s twice", key)
			}
			if len(outs) == maxFiles {
				return nil, invalid("the output directory holds more than %d files; write at most %d", maxFiles, maxFiles)
			}
			outs[key] = data
			total += len(data)
			i = next
		case "end":
			var n, size int
			if _, err := fmt.Sscanf(rest, "%d %d", &n, &size); err != nil || n != len(outs) || size != total {
				return nil, invalid("the outputs sidecar's log ends with %.60q, but holds %d file(s) of %d bytes", line, len(outs), total)
			}
			if len(outs) == 0 {
				return nil, nil
			}
			return outs, nil
		default:
			return nil, invalid("the outputs sidecar's log has an unexpected line %d (%.40q)", i+1, line)
		}
	}
	return nil, &Error{Reason: v1alpha1.ReasonOutputsTruncated, Message: "the outputs sidecar's log ends before its trailer: it was stopped while writing (a pod's grace period too short?) or the log was cut; the outputs are not used"}
}

// readFile reads the file record whose header line is lines[at] (rest is
// what follows "file "): its key and bytes, and the index of its last line.
func readFile(lines [][]byte, at int, rest string, left int) (string, string, int, *Error) {
	f := strings.Fields(rest)
	if len(f) != 3 {
		return "", "", 0, invalid("the outputs sidecar's log has a bad file line %d (%.60q)", at+1, rest)
	}
	key, sum := f[0], f[2]
	if err := substitution.ValidKey(key); err != nil {
		return "", "", 0, invalid("output %v", err)
	}
	size, err := strconv.Atoi(f[1])
	if err != nil || size < 0 {
		return "", "", 0, invalid("the outputs sidecar's log gives file %s a bad size %q", key, f[1])
	}
	if size > left {
		return "", "", 0, &Error{Reason: v1alpha1.ReasonOutputsTruncated, Message: fmt.Sprintf(
			"file %s (%d bytes) takes the task's file outputs past the most its tier allows: write less, or keep big results in a workspace", key, size)}
	}
	var data strings.Builder
	data.Grow(size)
	h := sha256.New()
	maxLine := base64.StdEncoding.EncodedLen(chunkBytes)
	chunk := make([]byte, base64.StdEncoding.DecodedLen(maxLine))
	i := at
	for data.Len() < size {
		i++
		if i >= len(lines) {
			return "", "", 0, &Error{Reason: v1alpha1.ReasonOutputsTruncated, Message: fmt.Sprintf("the outputs sidecar's log ends within file %s: the outputs are not used", key)}
		}
		line := bytes.TrimSuffix(lines[i], []byte("\r"))
		if len(line) > maxLine {
			return "", "", 0, invalid("the outputs sidecar's log holds a bad line %d within file %s", i+1, key)
		}
		n, err := base64.StdEncoding.Decode(chunk, line)
		if err != nil || data.Len()+n > size {
			return "", "", 0, invalid("the outputs sidecar's log holds a bad line %d within file %s", i+1, key)
		}
		h.Write(chunk[:n])
		data.Write(chunk[:n])
	}
	if hex.EncodeToString(h.Sum(nil)) != sum {
		return "", "", 0, invalid("file %s in the outputs sidecar's log does not match its digest: the log was altered", key)
	}
	if !utf8.ValidString(data.String()) {
		return "", "", 0, invalid("output file %s is not valid UTF-8; outputs are text", key)
	}
	return key, data.String(), i, nil
}
