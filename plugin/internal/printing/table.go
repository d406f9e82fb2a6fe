package printing

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// TableStyle is how a TableWriter lays out its columns.
type TableStyle struct {
	// Gap is the spaces between columns: 3 as kubectl get, 2 as kubectl
	// describe.
	Gap int
	// Indent is the spaces before every line.
	Indent int
	// MaxWidth, when positive, is the widest a line may be, in terminal
	// cells: cells are cut, marked with "…", to fit; the last column
	// first (see fit).
	MaxWidth int
	// Paint, when set, styles a row's cell (colours it) once it is made
	// safe and cut; the escape codes it adds take no width.
	Paint func(col int, cell string) string
}

// GetStyle is kubectl get's table: columns three spaces apart.
var GetStyle = TableStyle{Gap: 3}

// TableWriter writes a table the plugin draws itself the way kubectl
// prints one: no borders or rules, cells left-aligned and padded to the
// widest of their column as a terminal shows them (a CJK character or an
// emoji takes two cells, a colour escape none), no blanks at the end of a
// line. tablewriter does the layout.
type TableWriter struct {
	out    io.Writer
	style  TableStyle
	header []string
	rows   [][]string
}

// NewTableWriter returns a table that Render writes to out.
func NewTableWriter(out io.Writer, style TableStyle) *TableWriter {
	return &TableWriter{out: out, style: style}
}

// Header sets the header row, written as given: kubectl get's is upper
// case, describe's title case.
func (t *TableWriter) Header(cells ...string) {
	t.header = cleanCells(cells)
}

// Row adds a row.
func (t *TableWriter) Row(cells ...string) {
	t.rows = append(t.rows, cleanCells(cells))
}

// Render writes the header and the rows.
func (t *TableWriter) Render() error {
	cols := len(t.header)
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return nil
	}
	// Copies, every one cols long, that fit and Paint may change.
	all := make([][]string, 0, len(t.rows)+1)
	if t.header != nil {
		all = append(all, t.header)
	}
	all = append(all, t.rows...)
	for i, r := range all {
		all[i] = append(slices.Clone(r), make([]string, cols-len(r))...)
	}
	rows := all[len(all)-len(t.rows):]
	if t.style.MaxWidth > 0 {
		t.fit(all, cols)
	}
	if t.style.Paint != nil {
		for _, r := range rows {
			for c := range r {
				r[c] = t.style.Paint(c, r[c])
			}
		}
	}

	// The gap is the left padding of every column but the first: a wider
	// right padding would be repeated to fill a cell, then cut.
	pads := make([]tw.Padding, cols)
	pads[0] = tw.PaddingNone
	for c := 1; c < cols; c++ {
		pads[c] = tw.Padding{Left: strings.Repeat(" ", t.gap()), Overwrite: true}
	}
	var buf bytes.Buffer
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		Padding:    tw.CellPadding{Global: tw.PaddingNone, PerColumn: pads},
	}
	table := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderConfig(cell),
		tablewriter.WithRowConfig(cell),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if t.header != nil {
		table.Header(all[0])
	}
	if err := table.Bulk(rows); err != nil {
		return err
	}
	if err := table.Render(); err != nil {
		return err
	}

	indent := strings.Repeat(" ", t.style.Indent)
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(indent + strings.TrimRight(line, " \n") + "\n")
	}
	_, err := io.WriteString(t.out, out.String())
	return err
}

// fit cuts cells so no line is wider than MaxWidth. The last column (a
// message, outputs) gives way first, down to its header's width; if the
// columns before it are still too wide (a DAG's step names, in STEP and
// again in AFTER), the widest columns are cut, to one width. Columns at
// the end that would not get a cell each are left out.
func (t *TableWriter) fit(rows [][]string, cols int) {
	shown := cols
	for shown > 1 && t.style.Indent+(shown-1)*t.gap()+shown > t.style.MaxWidth {
		shown--
	}
	widths := make([]int, shown)
	for c := range widths {
		for _, r := range rows {
			widths[c] = max(widths[c], Width(r[c]))
		}
	}
	floor := 1
	if t.header != nil {
		floor = max(floor, Width(t.header[shown-1]))
	}
	limits := fitWidths(widths, t.style.MaxWidth-t.style.Indent-(shown-1)*t.gap(), floor)
	for _, r := range rows {
		for c := range r {
			if c < shown {
				r[c] = Truncate(r[c], limits[c])
			} else {
				r[c] = ""
			}
		}
	}
}

// fitWidths cuts column widths to add up to room at most: the last one
// first, down to floor, then the widest ones to a common width, the
// cells left over going to the leftmost of them.
func fitWidths(widths []int, room, floor int) []int {
	out := slices.Clone(widths)
	last := len(out) - 1
	others := 0
	for _, w := range out[:last] {
		others += w
	}
	out[last] = min(out[last], max(room-others, floor))
	if others+out[last] <= room {
		return out
	}
	// The widest k columns get level cells each, the rest keep theirs.
	sorted := slices.Sorted(slices.Values(out))
	used, level, k := 0, 0, 0
	for i, w := range sorted {
		k = len(sorted) - i
		if used+w*k > room {
			level = max((room-used)/k, 0)
			break
		}
		used += w
	}
	extra := room - used - level*k
	for c, w := range out {
		if w > level {
			out[c] = level
			if extra > 0 {
				out[c]++
				extra--
			}
		}
	}
	return out
}

// cleanCells makes cells safe to print as kubectl's table printer does (a
// value of several lines shows its first and "...") and more: every
// control is shown escaped (Cell), tabs become spaces.
func cleanCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, s := range cells {
		out[i] = Cell(s)
	}
	return out
}

// gap is the spaces between columns, at least one.
func (t *TableWriter) gap() int { return max(t.style.Gap, 1) }
