package jobs

import (
	"reflect"
	"strings"
	"testing"
)

func TestOnly(t *testing.T) {
	b := &Batch{File: "/n/night.yaml", Jobs: []*Job{
		{Name: "a"}, {Name: "b", Needs: []string{"a"}}, {Name: "c", Needs: []string{"a", "b"}}, {Name: "d"},
	}}
	for _, tc := range []struct {
		names []string
		want  map[string][]string // job → its needs, in file order
		err   string
	}{
		{names: []string{"c", "b"}, want: map[string][]string{"b": {}, "c": {"b"}}},
		{names: []string{"d"}, want: map[string][]string{"d": nil}},
		{names: []string{"a", "b", "c", "d"}, want: map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}, "d": nil}},
		{names: []string{"x"}, err: `/n/night.yaml: no job "x" (its jobs: a, b, c, d)`},
		{names: nil, err: "no job to run"},
	} {
		got, err := b.Only(tc.names)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.names, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.names, err)
		}
		needs := map[string][]string{}
		var order []string
		for _, j := range got.Jobs {
			needs[j.Name] = j.Needs
			order = append(order, j.Name)
			if len(j.Needs) == 0 {
				needs[j.Name] = tc.want[j.Name] // nil and empty read alike
			}
		}
		if !reflect.DeepEqual(needs, tc.want) {
			t.Errorf("%v: needs %v, want %v", tc.names, needs, tc.want)
		}
		for i := 1; i < len(order); i++ {
			if jobIndex(b, order[i-1]) > jobIndex(b, order[i]) {
				t.Errorf("%v: order %v is not the file's", tc.names, order)
			}
		}
	}
	if len(b.Jobs) != 4 || len(b.Jobs[2].Needs) != 2 {
		t.Errorf("Only changed the batch: %+v", b.Jobs)
	}
}

func jobIndex(b *Batch, name string) int {
	for i, j := range b.Jobs {
		if j.Name == name {
			return i
		}
	}
	return -1
}
