package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// DefaultTimeout is the article's 5 seconds.
const DefaultTimeout = 5 * time.Second

// Probe runs the prober of srv's transport.
func Probe(ctx context.Context, srv *mcpconfig.Server, opts Options) Result {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	switch srv.Transport {
	case mcpconfig.Stdio:
		return Stdio(ctx, srv, opts)
	case mcpconfig.HTTP:
		return HTTP(ctx, srv, opts)
	case mcpconfig.SSE:
		return SSE(ctx, srv, opts)
	default:
		return Result{Verdict: Unsupported, Tools: -1,
			Reason: fmt.Sprintf("transport %q cannot be probed by nightwatch", srv.Transport)}
	}
}
