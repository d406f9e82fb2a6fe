package docgen

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Anchors are the fragments a Markdown file answers to on GitHub: one per
// ATX heading (its slug, then slug-1, slug-2 for repeats) and the id or
// name of each HTML element. Headings inside fenced code are not headings.
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(md) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		text, ok := headingText(line)
		if !ok {
			continue
		}
		slug := Slug(text)
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var (
	htmlID     = regexp.MustCompile(`<a\s[^>]*\b(?:id|name)="([^"]+)"`)
	atx        = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?[ \t]*$`)
	closingATX = regexp.MustCompile(`[ \t]+#+$`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`</?[A-Za-z][^>]*>`)
)

// headingText is the text of an ATX heading line as GitHub renders it
// (code spans and links reduced to their text, tags dropped).
func headingText(line string) (string, bool) {
	m := atx.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	text := closingATX.ReplaceAllString(m[1], "")
	if text == strings.Repeat("#", len(text)) {
		text = ""
	}
	text = linkText.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	return strings.ReplaceAll(text, "`", ""), true
}

// Slug is GitHub's anchor for a heading's text (github-slugger): lower
// case, punctuation dropped but for - and _, each space a -.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Link is one link of a Markdown file: where it points and on which line.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("(`+)[^`]*?(`+)")
)

// Links are the inline links, images and link definitions of a Markdown
// file, outside code blocks and code spans.
func Links(md string) []Link {
	var out []Link
	for i, line := range proseLines(md) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: i + 1, Target: strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}

// proseLines are md's lines with those of fenced code blocks (fences
// included) blanked, so line numbers stay.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if len(line)-len(trimmed) <= 3 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
			lines[i] = ""
		}
	}
	return lines
}

// cell makes text fit a Markdown table cell and read as written: one
// line, pipes escaped, and outside code spans the characters GitHub would
// take for HTML or emphasis escaped.
func cell(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	return strings.ReplaceAll(escapeProse(text), "|", `\|`)
}

// escapeProse escapes <, >, *, \ and a word's leading _ outside code spans,
// so text from Go comments and YAML renders as it reads.
func escapeProse(text string) string {
	var b strings.Builder
	inCode := false
	for i, r := range text {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case inCode:
			b.WriteRune(r)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '*' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '_' && (i == 0 || !isWord(rune(text[i-1]))) && i+1 < len(text) && isWord(rune(text[i+1])):
			// Only an underscore that starts a word can open emphasis.
			b.WriteString(`\_`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// paragraphs joins wrapped lines into paragraphs (blank lines separate
// them) and escapes each as prose.
func paragraphs(text string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, escapeProse(p))
		}
	}
	return strings.Join(out, "\n\n")
}
