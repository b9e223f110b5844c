// Command fetch_url is the "fetch_url" hosted tool as its own Lambda
// function (payload: docs/architecture.md, "Tool Lambda payload").
//
// LAMBENT_FETCH_ALLOW_HOSTS (comma-separated hosts, host:ports, IPs or
// CIDRs) lets it reach destinations its SSRF guard refuses otherwise.
package main

import (
	"os"

	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

func main() {
	lambdatool.Serve(fetchurl.Tool(config(os.Getenv)))
}

// config reads the tool's configuration from the environment.
func config(getenv func(string) string) fetchurl.Config {
	return fetchurl.Config{AllowHosts: egress.AllowHostsFromEnv(getenv)}
}
