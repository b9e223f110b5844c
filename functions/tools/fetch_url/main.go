// Command fetch_url is the "fetch_url" hosted tool as its own Lambda
// function (payload: docs/architecture.md, "Tool Lambda payload").
//
// LAMBENT_FETCH_ALLOW_HOSTS (comma-separated hosts, host:ports, IPs or
// CIDRs) lets it reach destinations its SSRF guard refuses otherwise.
package main

import (
	"os"
	"strings"

	"github.com/lambent/lambent/pkg/tools/fetchurl"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

func main() {
	lambdatool.Serve(fetchurl.Tool(config(os.Getenv)))
}

// config reads the tool's configuration from the environment.
func config(getenv func(string) string) fetchurl.Config {
	var cfg fetchurl.Config
	for _, h := range strings.Split(getenv("LAMBENT_FETCH_ALLOW_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowHosts = append(cfg.AllowHosts, h)
		}
	}
	return cfg
}
