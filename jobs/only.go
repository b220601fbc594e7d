package jobs

import (
	"fmt"
	"slices"
	"strings"
)

// Only is the batch with just the named jobs, in file order: what
// `nightwatch rerun` runs as a new night. A need on a job left out is
// dropped: the jobs left out are those the night it re-runs finished
// well, so their work is there. The batch itself is not changed; an
// unknown name is an error that names the batch file and the jobs it has.
func (b *Batch) Only(names []string) (*Batch, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no job to run", b.File)
	}
	for _, name := range names {
		if b.Job(name) == nil {
			known := make([]string, len(b.Jobs))
			for i, j := range b.Jobs {
				known[i] = j.Name
			}
			return nil, fmt.Errorf("%s: no job %q (its jobs: %s)", b.File, name, strings.Join(known, ", "))
		}
	}
	out := *b
	out.Jobs = nil
	for _, j := range b.Jobs {
		if !slices.Contains(names, j.Name) {
			continue
		}
		c := *j
		c.Needs = slices.DeleteFunc(slices.Clone(j.Needs), func(n string) bool { return !slices.Contains(names, n) })
		out.Jobs = append(out.Jobs, &c)
	}
	return &out, nil
}
