package printing

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mattn/go-runewidth"
)

func TestTableLooksLikeKubectl(t *testing.T) {
	var out bytes.Buffer
	tbl := NewTableWriter(&out, GetStyle)
	tbl.Header("NAME", "READY", "MESSAGE")
	tbl.Row("web", "1/1", "")
	tbl.Row("a-much-longer-name", "", "two\nlines")
	tbl.Row("evil", "0/1", "\x1b[2Jcleared")
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	want := `NAME                 READY   MESSAGE
web                  1/1
a-much-longer-name           two...
evil                 0/1     ^[[2Jcleared
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTableWithoutHeaderOrRows(t *testing.T) {
	var out bytes.Buffer
	tbl := NewTableWriter(&out, GetStyle)
	tbl.Row("a", "b")
	tbl.Row("ccc", "d")
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	if want := "a     b\nccc   d\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}

	out.Reset()
	if err := NewTableWriter(&out, GetStyle).Render(); err != nil || out.Len() != 0 {
		t.Errorf("an empty table wrote %q, %v", out.String(), err)
	}
}

// Wide characters take two cells and colour escapes none: columns stay
// aligned on a terminal, and MaxWidth cuts the last column to fit.
func TestTableMeasuresTerminalCells(t *testing.T) {
	var out bytes.Buffer
	tbl := NewTableWriter(&out, TableStyle{Gap: 2, Indent: 2, MaxWidth: 29, Paint: func(col int, s string) string {
		if col == 1 {
			return "\x1b[32m" + s + "\x1b[0m"
		}
		return s
	}})
	tbl.Header("NAME", "PHASE", "DETAILS")
	tbl.Row("ビルド", "Succeeded", "ok")
	tbl.Row("b", "Failed", "失敗しました、詳細はログを参照")
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	plain := strings.NewReplacer("\x1b[32m", "", "\x1b[0m", "").Replace(out.String())
	want := `  NAME    PHASE      DETAILS
  ビルド  Succeeded  ok
  b       Failed     失敗し…
`
	if diff := cmp.Diff(want, plain); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), "\x1b[32mSucceeded\x1b[0m  ok") {
		t.Errorf("the cell is painted, not its padding: %q", out.String())
	}
	if strings.Contains(out.String(), "\x1b[32mPHASE") {
		t.Errorf("the header is not painted: %q", out.String())
	}
	for line := range strings.Lines(plain) {
		if w := runewidth.StringWidth(strings.TrimSuffix(line, "\n")); w > 29 {
			t.Errorf("line of %d cells, want at most 29: %q", w, line)
		}
	}
}

// Columns before the last can be too wide on their own: once the last is
// down to its header's width, the widest are cut to one width.
func TestTableCutsEveryColumnToFit(t *testing.T) {
	var out bytes.Buffer
	tbl := NewTableWriter(&out, TableStyle{Gap: 2, Indent: 2, MaxWidth: 30})
	tbl.Header("#", "STEP", "AFTER", "DETAILS")
	tbl.Row("0", "fetch-sources-from-the-monorepo", "", "sha=4f2a9c0e")
	tbl.Row("1", "build-the-image", "fetch-sources-from-the-monorepo", "")
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	want := `  #  STEP     AFTER    DETAILS
  0  fetch-…           sha=4f…
  1  build-…  fetch-…
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for line := range strings.Lines(out.String()) {
		if w := runewidth.StringWidth(strings.TrimSuffix(line, "\n")); w > 30 {
			t.Errorf("line of %d cells, want at most 30: %q", w, line)
		}
	}
}
