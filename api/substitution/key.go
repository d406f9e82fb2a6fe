package substitution

import "fmt"

// KeyPattern is the syntax of an output key, shared by ${steps.X.output.KEY}
// and by the outputs a task writes, so every output can be referenced.
const KeyPattern = `[A-Za-z_][A-Za-z0-9_.-]*`

// MaxKeyLength is the longest output key.
const MaxKeyLength = 63

// ValidKey reports whether key is a valid output key: KeyPattern, at most
// MaxKeyLength characters.
func ValidKey(key string) error {
	if key == "" {
		return fmt.Errorf("key is empty")
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("key %q is %d characters; at most %d are allowed", key, len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !isLetter(c) && c != '_' && (i == 0 || !isDigit(c) && c != '.' && c != '-') {
			return fmt.Errorf("key %q is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'", key)
		}
	}
	return nil
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLower(c byte) bool  { return 'a' <= c && c <= 'z' }
