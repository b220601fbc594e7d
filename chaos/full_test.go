//go:build chaos

package chaos

// `go test -tags chaos ./chaos/` runs the full chaos night.
func init() { fullByTag = true }
