package jobs

// Server returns the server of that name, or nil.
func (b *Batch) Server(name string) *Server {
	for _, s := range b.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Job returns the job of that name, or nil.
func (b *Batch) Job(name string) *Job {
	for _, j := range b.Jobs {
		if j.Name == name {
			return j
		}
	}
	return nil
}

// ServersOf returns the servers a job's session gets, in the job's order.
// Load has checked that each exists; an unknown name (a Job built by hand)
// is left out rather than returned as nil.
func (b *Batch) ServersOf(j *Job) []*Server {
	out := make([]*Server, 0, len(j.Servers))
	for _, name := range j.Servers {
		if s := b.Server(name); s != nil {
			out = append(out, s)
		}
	}
	return out
}
