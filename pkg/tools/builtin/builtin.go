// Package builtin lists the hosted tools that ship with Lambent and builds
// the hosted tool registry from a manifest.
package builtin

import (
	"fmt"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
)

// Config configures the built-in tools.
type Config struct {
	// Fetch configures fetch_url.
	Fetch fetchurl.Config
}

// Tools returns every built-in hosted tool by name.
func Tools(cfg Config) map[string]tools.Hosted {
	calc := calculator.Tool()
	fetch := fetchurl.Tool(cfg.Fetch)
	return map[string]tools.Hosted{calc.Definition.Name: calc, fetch.Definition.Name: fetch}
}

// DefaultManifest lists the built-in tools, run in-process.
func DefaultManifest() *tools.Manifest {
	return &tools.Manifest{Tools: []tools.ManifestTool{
		{Name: "calculator", Backing: tools.Backing{Type: tools.BackingLocal}},
		{Name: "fetch_url", Backing: tools.Backing{Type: tools.BackingLocal}},
	}}
}

// Registry builds the registry of the manifest's local tools from the
// built-ins. Lambda-backed tools are left to the Lambda executor.
func Registry(m *tools.Manifest, cfg Config) (*tools.Registry, error) {
	builtins := Tools(cfg)
	reg := tools.NewRegistry()
	for _, t := range m.Tools {
		if t.Backing.Type != tools.BackingLocal {
			continue
		}
		name := t.Backing.Handler
		if name == "" {
			name = t.Name
		}
		h, ok := builtins[name]
		if !ok {
			return nil, fmt.Errorf("builtin: manifest tool %q names unknown built-in handler %q", t.Name, name)
		}
		if err := reg.Register(tools.Hosted{Definition: t.Definition(h.Definition), Handler: h.Handler}, nil); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
