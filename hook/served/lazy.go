package served

import "sync"

// Lazy is a served hook started at its first use and closed once. The
// night's executor and a cluster's worker each hold one: a night or a
// worker that runs no session asks the agent nothing (its version) and
// listens on nothing.
type Lazy struct {
	once sync.Once
	mu   sync.Mutex
	srv  *Server
}

// Get returns the hook, made by start at the first call; nil (start
// returned nil, or Close came first) means the sessions keep the command
// hook.
func (l *Lazy) Get(start func() *Server) *Server {
	l.once.Do(func() {
		if start == nil {
			return
		}
		srv := start()
		l.mu.Lock()
		l.srv = srv
		l.mu.Unlock()
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.srv
}

// Close stops the hook if one was started, after a start under way has
// finished; no hook is started after it.
func (l *Lazy) Close() {
	l.once.Do(func() {})
	l.mu.Lock()
	srv := l.srv
	l.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}
