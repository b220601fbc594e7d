package probe

import (
	"context"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

func TestScratchDetect(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: bin, Args: []string{"--mode", "never-answer"}}
	done := make(chan struct{})
	go func() { Stdio(context.Background(), srv, Options{Timeout: time.Second}); close(done) }()
	time.Sleep(300 * time.Millisecond)
	t.Logf("during: %d", len(probeGoroutines()))
	<-done
	t.Logf("after: %d", len(probeGoroutines()))
}
