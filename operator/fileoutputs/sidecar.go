package fileoutputs

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Command is the subcommand of the operator's binary the sidecar runs.
const Command = "outputs"

// Serve waits until ctx ends (the kubelet's SIGTERM once the task's
// container has ended), then writes dir's files as a frame to w. Whatever
// is wrong with the files is written in the frame, for the operator to
// report; Serve fails only when w does, and the sidecar still exits 0
// then: its exit code never changes the pod's outcome.
func Serve(ctx context.Context, dir string, maxFiles, maxBytes int, w io.Writer) error {
	<-ctx.Done()
	files, ferr := Collect(dir, maxFiles, maxBytes)
	return Write(w, files, ferr)
}

// Main runs the sidecar with args (those after the subcommand's name).
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	dir := fs.String("dir", "", "Directory whose files are the task's outputs.")
	maxBytes := fs.Int("max-bytes", MaxBytes, "Most bytes the files may hold in all.")
	maxFiles := fs.Int("max-files", MaxFiles, "Most files the directory may hold.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || *maxBytes < 0 || *maxBytes > MaxBytes || *maxFiles < 0 || *maxFiles > MaxFiles {
		fmt.Fprintf(os.Stderr, "error: outputs needs --dir, --max-bytes within 0..%d and --max-files within 0..%d\n", MaxBytes, MaxFiles)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Serve(ctx, *dir, *maxFiles, *maxBytes, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error: write the outputs:", err)
	}
	return 0
}
