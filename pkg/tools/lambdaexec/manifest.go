package lambdaexec

import (
	"sort"
	"strings"
	"unicode"

	"github.com/lambent/lambent/pkg/tools"
)

// ManifestFor returns a manifest whose tools are Lambda-backed: functions
// maps a tool name to its function name or ARN (a "name:qualifier" or a
// qualified ARN also works, as with Invoke). Tools are sorted by name;
// descriptions and parameters are left to the Executor's fallback.
func ManifestFor(functions map[string]string) *tools.Manifest {
	m := &tools.Manifest{Tools: make([]tools.ManifestTool, 0, len(functions))}
	for name, fn := range functions {
		m.Tools = append(m.Tools, tools.ManifestTool{Name: name, Backing: tools.Backing{Type: tools.BackingLambda, Function: fn}})
	}
	sort.Slice(m.Tools, func(i, j int) bool { return m.Tools[i].Name < m.Tools[j].Name })
	return m
}

// LocalManifest returns the manifest for a local Invoke endpoint (`make
// lambdas`, or `sam local start-lambda` on template.yaml): each named tool
// invokes the function FunctionLogicalID(name), the name both endpoints
// serve it under.
func LocalManifest(names ...string) *tools.Manifest {
	fns := make(map[string]string, len(names))
	for _, n := range names {
		fns[n] = FunctionLogicalID(n)
	}
	return ManifestFor(fns)
}

// FunctionLogicalID is the template.yaml logical ID of a tool's function:
// the tool name in CamelCase followed by "ToolFunction" ("calculator" ->
// "CalculatorToolFunction", "fetch_url" -> "FetchUrlToolFunction").
// deploy/manifest_test.go holds template.yaml to it; `sam local
// start-lambda` serves functions under their logical IDs.
func FunctionLogicalID(tool string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(tool, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' }) {
		r := []rune(part)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	b.WriteString("ToolFunction")
	return b.String()
}
