// Package notify tells the operator that a night ended (or stopped): the
// batch's webhook gets the text as a chat message, its command gets it on
// stdin. Everything it sends is redacted and escaped for where it goes.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Timeout bounds each notification: the night is over, and a hung
// webhook must not keep the supervisor (or the next scheduled night) waiting.
const Timeout = 30 * time.Second

// Send tells the operator the night ended: the batch's webhook gets a
// JSON body whose "text" field Slack (and most chat webhooks) show, and its
// command gets the same text on stdin. A failure is logged and returned,
// never fatal: the night's work is done either way.
func Send(ctx context.Context, n jobs.Notify, text string, log zerolog.Logger) []error {
	// Everything that leaves the process is redacted first; the summary
	// already is, and the rest (the STOPPED reason, AfterNight's text) is
	// done here once.
	text = redact.String(text)
	var errs []error
	if n.Webhook != "" {
		if err := postWebhook(ctx, n.Webhook, slackEscape(text), log); err != nil {
			errs = append(errs, err)
			log.Error().Err(err).Msg("notification webhook failed")
		} else {
			log.Info().Msg("notification sent to the webhook")
		}
	}
	if len(n.Command) > 0 {
		if err := runNotifyCommand(ctx, n.Command, text); err != nil {
			errs = append(errs, err)
			log.Error().Err(err).Msg("notification command failed")
		} else {
			log.Info().Str("command", n.Command[0]).Msg("notification command ran")
		}
	}
	return errs
}

// slackEscaper escapes the three characters Slack's message format gives
// a meaning (https://api.slack.com/reference/surfaces/formatting#escaping):
// text from the night cannot ping a channel (<!channel>) or disguise a
// link (<https://evil|docs>). Other chat webhooks show the entities as the
// characters or as harmless text.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

func postWebhook(ctx context.Context, url, text string, log zerolog.Logger) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	c := retryablehttp.NewClient()
	c.RetryMax = 3
	c.RetryWaitMin, c.RetryWaitMax = 500*time.Millisecond, 5*time.Second
	c.HTTPClient.Timeout = 10 * time.Second
	c.Logger = nil // its default logs the URL, which may carry a token
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return fmt.Errorf("notify webhook: %s", redact.String(err.Error(), url))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		// The URL of a chat webhook is its secret.
		return fmt.Errorf("notify webhook: %s", redact.String(err.Error(), url))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notify webhook: HTTP %d", resp.StatusCode)
	}
	return nil
}

func runNotifyCommand(ctx context.Context, argv []string, text string) error {
	res, err := proc.Run(ctx, proc.Spec{Argv: argv, Stdin: strings.NewReader(text), Timeout: Timeout, Grace: 2 * time.Second})
	var re *proc.RunError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return fmt.Errorf("notify command %s: %s: %s", argv[0], re.How,
			redact.Tail(strings.TrimSpace(redact.String(string(res.Stdout)+string(res.Stderr))), 300))
	default:
		return fmt.Errorf("notify command %s: %w", argv[0], err)
	}
}
