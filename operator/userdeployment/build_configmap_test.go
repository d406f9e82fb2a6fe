package userdeployment

import (
	"testing"
)

func TestConfigHashFollowsTheConfig(t *testing.T) {
	a := configHash(map[string]string{"A": "1", "B": "2"})
	if b := configHash(map[string]string{"B": "2", "A": "1"}); a != b {
		t.Errorf("hash depends on map order: %s != %s", a, b)
	}
	if c := configHash(map[string]string{"A": "1", "B": "3"}); a == c {
		t.Errorf("a changed value keeps the hash %s", a)
	}
	if d := configHash(map[string]string{"A": "1=B", "": "2"}); a == d {
		t.Errorf("keys and values can be shifted without changing the hash %s", a)
	}
}
