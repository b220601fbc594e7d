//go:build tools

// Package nightwatch pins the chosen dependencies while the packages that
// use them are being written; removed once each is imported for real.
package nightwatch

import (
	_ "github.com/gofrs/flock"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/robfig/cron/v3"
	_ "github.com/rs/zerolog"
	_ "github.com/spf13/cobra"
	_ "gopkg.in/yaml.v3"
)
