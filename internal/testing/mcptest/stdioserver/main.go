// Command stdioserver is mcptest's MCP server over stdio, for tests of the
// stdio transport (built and started by them).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lambent/lambent/internal/testing/mcptest"
)

func main() {
	if err := mcptest.Serve(context.Background(), mcptest.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
