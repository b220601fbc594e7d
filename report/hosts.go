package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/journal"
)

// Host is one cluster host's share of the night: the attempts its worker
// ran, and whether it coordinated (ran `nightwatch run`) for some of it.
type Host struct {
	Name string `json:"name"`
	// Coordinator: a run-started or run-resumed line came from this host.
	Coordinator bool `json:"coordinator,omitempty"`
	// Attempts are the attempts it ran; Outcomes counts them by how each
	// ended (done, failed, retried, stopped, interrupted, unfinished…).
	Attempts int            `json:"attempts"`
	Outcomes map[string]int `json:"outcomes,omitempty"`
	// Jobs are the jobs it ran an attempt of, in journal order.
	Jobs     []string      `json:"jobs,omitempty"`
	Duration time.Duration `json:"durationNs"` // its attempts' wall time, summed
	CostUSD  float64       `json:"costUsd"`
}

// hostTally remembers the hosts in the order the journal names them.
type hostTally struct {
	order       []string
	coordinator map[string]bool
}

func (h *hostTally) saw(name string) {
	if name == "" {
		return
	}
	for _, n := range h.order {
		if n == name {
			return
		}
	}
	h.order = append(h.order, name)
}

func (h *hostTally) coordinated(name string) {
	if name == "" {
		return
	}
	h.saw(name)
	if h.coordinator == nil {
		h.coordinator = map[string]bool{}
	}
	h.coordinator[name] = true
}

// ranOn records the host a session-process line says runs an attempt
// (the worker that started the session).
func (b *builder) ranOn(ev journal.Event) {
	if ev.Host == "" {
		return
	}
	j := b.job(ev.Job)
	for i := range j.tries {
		if j.tries[i].n == ev.Attempt {
			j.tries[i].host = ev.Host
		}
	}
	b.hosts.saw(ev.Host)
}

// outcomeOrder is the order a host's outcomes are told in.
var outcomeOrder = []string{"done", "failed", "retried", "stopped", "interrupted", "skipped", StatusUnfinished}

// finishHosts sums each host's attempts; a night on one host has none.
func (b *builder) finishHosts() {
	n := b.n
	for _, name := range b.hosts.order {
		h := Host{Name: name, Coordinator: b.hosts.coordinator[name]}
		for _, j := range n.Jobs {
			ran := false
			for _, a := range j.tries {
				if a.host != name {
					continue
				}
				ran = true
				h.Attempts++
				if h.Outcomes == nil {
					h.Outcomes = map[string]int{}
				}
				h.Outcomes[a.outcome]++
				h.Duration += a.to.Sub(a.from)
				h.CostUSD += a.cost
			}
			if ran {
				h.Jobs = append(h.Jobs, j.Name)
			}
		}
		n.Hosts = append(n.Hosts, h)
	}
}

// cluster says whether the night ran over several hosts (its events name
// hosts): only then do the reports show them.
func (n *Night) cluster() bool { return len(n.Hosts) > 0 }

// hostLine is one host's share, e.g. "mini (coordinator): 3 attempts (2
// done, 1 retried), 14m02s, $0.12: build-ios, digest".
func hostLine(h Host) string {
	line := h.Name
	if h.Coordinator {
		line += " (coordinator)"
	}
	if h.Attempts == 0 {
		return line + ": ran no attempt"
	}
	var counts []string
	seen := 0
	for _, o := range outcomeOrder {
		if c := h.Outcomes[o]; c > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", c, o))
			seen += c
		}
	}
	if other := h.Attempts - seen; other > 0 {
		counts = append(counts, fmt.Sprintf("%d other", other))
	}
	return fmt.Sprintf("%s: %s (%s), %s, $%.2f: %s", line, plural(h.Attempts, "attempt"), strings.Join(counts, ", "),
		span(h.Duration), h.CostUSD, strings.Join(h.Jobs, ", "))
}

// jobHosts is a job's host cell: the hosts its attempts ran on, "–" for
// one that never ran on any.
func jobHosts(j Job) string {
	if len(j.Hosts) == 0 {
		return "–"
	}
	return strings.Join(j.Hosts, ", ")
}

// onHost is " on H" for an attempt a cluster host ran, "" otherwise.
func onHost(a attempt) string {
	if a.host == "" {
		return ""
	}
	return " on " + a.host
}
