package traps

import (
	"fmt"
	"reflect"
	"testing"
)

func TestFailOpenVars(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want []FailOpenVar
	}{
		{"none", map[string]string{"PATH": "/bin"}, nil},
		{"blank is unset", map[string]string{"NIGHTWATCH_FAIL_OPEN": "  "}, nil},
		{"on", map[string]string{"ECC_MCP_HEALTH_FAIL_OPEN": "1"},
			[]FailOpenVar{{Name: "ECC_MCP_HEALTH_FAIL_OPEN", Value: "1", On: true, Known: true}}},
		{"off", map[string]string{"NIGHTWATCH_FAIL_OPEN": "no"},
			[]FailOpenVar{{Name: "NIGHTWATCH_FAIL_OPEN", Value: "no", Known: true}}},
		{"not yes or no, both names in order", map[string]string{"ECC_MCP_HEALTH_FAIL_OPEN": "maybe", "NIGHTWATCH_FAIL_OPEN": "TRUE"},
			[]FailOpenVar{{Name: "NIGHTWATCH_FAIL_OPEN", Value: "TRUE", On: true, Known: true},
				{Name: "ECC_MCP_HEALTH_FAIL_OPEN", Value: "maybe"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FailOpenVars(MapLookup(tc.vars, func(s string) string { return s })); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// A settings file's "env" holds JSON values.
	got := FailOpenVars(MapLookup(map[string]any{"NIGHTWATCH_FAIL_OPEN": true}, func(v any) string { return fmt.Sprint(v) }))
	if len(got) != 1 || !got[0].On {
		t.Errorf("a JSON true: %+v", got)
	}
}
