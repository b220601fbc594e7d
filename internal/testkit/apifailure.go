package testkit

// FastAPIFailureEnv makes the real CLI give up on a failing Messages API at
// once, for ClaudeRun.Env: CLAUDE_CODE_MAX_RETRIES=0. Without it the CLI
// retries connection errors, 5xx, 401 and an API key's 429 for about three
// minutes (10 retries with backoff; measured on 2.1.197 and 2.1.332) and a
// 529 three times. The knob leaves every final text the same except the
// 529 one: "API Error: 529 Overloaded. …" with it, "API Error: Repeated 529
// Overloaded errors. …" without (where 2.1.197 also drops
// api_error_status). A subscriber's usage limit is never retried.
//
// CLAUDE_CODE_MAX_RETRIES=N (N > 0) keeps N retries with the CLI's own
// backoff (about 0.5 s, 1 s, 2 s, …): a fake outage shorter than that is
// absorbed, as a real short outage is.
var FastAPIFailureEnv = []string{"CLAUDE_CODE_MAX_RETRIES=0"}

// SubscriberEnv logs the CLI in as a subscriber with a long-lived OAuth
// token (the form `claude setup-token` prints; the fake accepts any)
// instead of RunClaude's default API key: only then does a usage limit read
// "You've hit your … limit · resets …" and stream a rate_limit_event.
var SubscriberEnv = []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-fake-test-token"}
