package environ

import (
	"slices"
	"testing"
)

func TestOverlay(t *testing.T) {
	tests := []struct {
		name string
		base []string
		over map[string]string
		want []string
	}{
		{"replace and add", []string{"A=1", "B=2", "C=3"}, map[string]string{"B": "x", "Z": "z", "D": ""},
			[]string{"A=1", "C=3", "B=x", "D=", "Z=z"}},
		{"empty overlay keeps base", []string{"A=1"}, nil, []string{"A=1"}},
		{"values with =", []string{"A=b=c"}, map[string]string{"K": "v=w"}, []string{"A=b=c", "K=v=w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overlay(tt.base, tt.over); !slices.Equal(got, tt.want) {
				t.Errorf("Overlay = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Overlay(nil, nil); len(got) == 0 {
		t.Error("a nil base is the process's environment")
	}
}

func TestLookup(t *testing.T) {
	get := Lookup([]string{"A=1", "A=2", "E=", "noequals"})
	if v, ok := get("A"); !ok || v != "2" {
		t.Errorf("A = %q %v, want the last value", v, ok)
	}
	if v, ok := get("E"); !ok || v != "" {
		t.Errorf("E = %q %v, want set and empty", v, ok)
	}
	if _, ok := get("noequals"); ok {
		t.Error("an entry without = is not a variable")
	}
}
