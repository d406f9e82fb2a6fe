package podlogs

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLineWriter(t *testing.T) {
	var lines []string
	w := Lines(func(s string) { lines = append(lines, s) })
	for _, chunk := range []string{"one\ntw", "o\r\n", "", "three"} {
		fmt.Fprint(w, chunk)
	}
	if diff := cmp.Diff([]string{"one", "two"}, lines); diff != "" {
		t.Errorf("before Close (-want +got):\n%s", diff)
	}
	_ = w.Close()
	if diff := cmp.Diff([]string{"one", "two", "three"}, lines); diff != "" {
		t.Errorf("after Close (-want +got):\n%s", diff)
	}
}
