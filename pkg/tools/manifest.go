package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/lambent/lambent/pkg/api"
)

// Manifest lists the hosted tools a gateway offers (LAMBENT_TOOLS): each
// tool's name, description, JSON Schema parameters and backing.
type Manifest struct {
	Tools []ManifestTool `json:"tools"`
}

// ManifestTool is one hosted tool of the manifest.
type ManifestTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Backing     Backing         `json:"backing"`
}

// Backing types.
const (
	// BackingLocal runs a built-in handler in-process.
	BackingLocal = "local"
	// BackingLambda invokes a Lambda function.
	BackingLambda = "lambda"
)

// Backing says what runs a hosted tool.
type Backing struct {
	// Type is "local" or "lambda".
	Type string `json:"type"`
	// Handler names the built-in handler of a local tool (default: the tool name).
	Handler string `json:"handler,omitempty"`
	// Function is the Lambda function name or ARN of a lambda tool.
	Function string `json:"function,omitempty"`
	// Qualifier is an optional Lambda alias or version.
	Qualifier string `json:"qualifier,omitempty"`
}

// LoadManifest reads a manifest from value: a JSON document when it starts
// with '{', else a path to one.
func LoadManifest(value string) (*Manifest, error) {
	data := []byte(strings.TrimSpace(value))
	if len(data) == 0 || data[0] != '{' {
		b, err := os.ReadFile(value)
		if err != nil {
			return nil, fmt.Errorf("tools: read manifest: %w", err)
		}
		data = b
	}
	return ParseManifest(data)
}

// ParseManifest decodes and checks a manifest.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("tools: parse manifest: %w", err)
	}
	seen := map[string]bool{}
	for i, t := range m.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tools: manifest tool %d has no name", i)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tools: manifest lists %q twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return nil, fmt.Errorf("tools: manifest tool %q: parameters are not valid JSON", t.Name)
		}
		switch t.Backing.Type {
		case BackingLocal:
		case BackingLambda:
			if t.Backing.Function == "" {
				return nil, fmt.Errorf("tools: manifest tool %q: a lambda backing needs a function", t.Name)
			}
		default:
			return nil, fmt.Errorf("tools: manifest tool %q: unknown backing type %q (want local or lambda)", t.Name, t.Backing.Type)
		}
	}
	return &m, nil
}

// Definition returns the tool's definition, filling description and
// parameters from fallback where the manifest leaves them out.
func (t ManifestTool) Definition(fallback api.ToolDefinition) api.ToolDefinition {
	d := api.ToolDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	if d.Description == "" {
		d.Description = fallback.Description
	}
	if len(d.Parameters) == 0 {
		d.Parameters = fallback.Parameters
	}
	return d
}
