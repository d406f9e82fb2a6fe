package templates

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// scan splits s into literal text and ${{ NAME }} placeholders, calling lit
// and ref in order; offset is the byte offset of the placeholder in s.
// "$${{" is a literal "${{". It is linear in len(s) and never recurses, so
// no template text can make it slow.
func scan(s string, lit func(string), ref func(name string, offset int) error) error {
	var errs []error
	start := 0 // start of the pending literal text
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${{")
		if j < 0 {
			break
		}
		j += i
		if j > 0 && s[j-1] == '$' {
			// "$${{": emit the text before the escape, then "${{".
			lit(s[start : j-1])
			lit("${{")
			i, start = j+3, j+3
			continue
		}
		end := strings.Index(s[j+3:], "}}")
		if end < 0 {
			errs = append(errs, fmt.Errorf("%q: \"${{\" at offset %d has no closing \"}}\"", clip(s), j))
			break
		}
		end += j + 3
		name := strings.TrimSpace(s[j+3 : end])
		if !paramNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("%q: ${{%s}} at offset %d is not a placeholder: write ${{ NAME }} with a parameter name, or $${{ for a literal", clip(s), s[j+3:end], j))
			i = end + 2
			continue
		}
		lit(s[start:j])
		if err := ref(name, j); err != nil {
			errs = append(errs, err)
		}
		i, start = end+2, end+2
	}
	if len(errs) == 0 {
		lit(s[start:])
	}
	return errors.Join(errs...)
}

func clip(s string) string {
	if len(s) <= 60 {
		return s
	}
	return s[:57] + "..."
}

// wholePlaceholder returns the name when s is exactly one placeholder.
func wholePlaceholder(s string) (string, bool) {
	var name string
	n, text := 0, false
	err := scan(s, func(l string) { text = text || l != "" }, func(p string, _ int) error { name = p; n++; return nil })
	if err != nil || n != 1 || text {
		return "", false
	}
	return name, true
}

// walkStrings calls fn for every string key and value under v, map keys in
// sorted order so errors come out the same way every time, and joins the
// errors.
func walkStrings(v any, path []string, fn func(path []string, s string, isKey bool) error) error {
	var errs []error
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(slices.Clip(path), k)
			if err := fn(p, k, true); err != nil {
				errs = append(errs, err)
			}
			if err := walkStrings(v[k], p, fn); err != nil {
				errs = append(errs, err)
			}
		}
	case []any:
		for i, e := range v {
			if err := walkStrings(e, append(slices.Clip(path), strconv.Itoa(i)), fn); err != nil {
				errs = append(errs, err)
			}
		}
	case string:
		if err := fn(path, v, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// transform returns a deep copy of v with every string value replaced by
// fn's result. Keys are copied as they are (validation forbids placeholders
// in them).
func transform(v any, path []string, fn func(path []string, s string) (any, error)) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := transform(e, append(slices.Clip(path), k), fn)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := transform(e, append(slices.Clip(path), strconv.Itoa(i)), fn)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case string:
		return fn(path, v)
	}
	return v, nil
}
