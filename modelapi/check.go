package modelapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// The cheap check of the model's API, for a night that waits out an
// outage: one POST of an empty body to ANTHROPIC_BASE_URL's /v1/messages
// (default https://api.anthropic.com), without credentials. The API
// answers it without running the model: 401 (no key) or 400 (no model,
// no messages) when it is up, 5xx or 529 when it is not, and nothing when
// it cannot be reached. So any answer below 500 proves it answers again,
// no model turn is spent and no secret leaves the machine. `claude auth
// status` would not do: it reads the login and never asks the API.
// /v1/messages rather than another path because that is where outages
// show (the fake API of the tests fails there only, as a real overload
// does).

// defaultBase is the Messages API when ANTHROPIC_BASE_URL is unset.
const defaultBase = "https://api.anthropic.com"

// checkTimeout bounds one check.
const checkTimeout = 15 * time.Second

// Base is the API the night's sessions call.
func Base(env []string) string {
	if v, ok := environ.Lookup(env)("ANTHROPIC_BASE_URL"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimRight(strings.TrimSpace(v), "/")
	}
	return defaultBase
}

// Check says whether the Messages API at base answers (see above); why
// says what the check met when it does not.
func Check(ctx context.Context, base string) (ok bool, why string) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", strings.NewReader("{}"))
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, text.OneLine(err.Error(), 200)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return false, fmt.Sprintf("the API answered %d", resp.StatusCode)
	}
	return true, ""
}
