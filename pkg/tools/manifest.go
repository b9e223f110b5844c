package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/lambent/lambent/pkg/tooldef"
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
	// BackingMCP is a remote (or, locally, stdio) MCP server: the tool
	// stands for all of the server's tools.
	BackingMCP = "mcp"
)

// Secret reference prefixes of an MCP backing's secret_headers and
// authorization: the value lives in SSM Parameter Store (a SecureString)
// or Secrets Manager (its SecretString; "#key" picks a field of a JSON
// secret), never in the manifest.
const (
	SecretSSM            = "ssm:"
	SecretSecretsManager = "secretsmanager:"
)

// Backing says what runs a hosted tool.
type Backing struct {
	// Type is "local", "lambda" or "mcp".
	Type string `json:"type"`
	// Handler names the built-in handler of a local tool (default: the tool name).
	Handler string `json:"handler,omitempty"`
	// Function is the Lambda function name or ARN of a lambda tool.
	Function string `json:"function,omitempty"`
	// Qualifier is an optional Lambda alias or version.
	Qualifier string `json:"qualifier,omitempty"`

	// URL is an MCP server's endpoint (HTTP transports).
	URL string `json:"url,omitempty"`
	// Transport is streamable_http (default), sse or stdio.
	Transport string `json:"transport,omitempty"`
	// Command is a stdio server's program and arguments (local runs only).
	Command []string `json:"command,omitempty"`
	// Headers are plain headers sent to the MCP server.
	Headers map[string]string `json:"headers,omitempty"`
	// SecretHeaders maps header names to secret references
	// ("ssm:<parameter>", "secretsmanager:<secret id>[#<json key>]").
	SecretHeaders map[string]string `json:"secret_headers,omitempty"`
	// Authorization is a secret reference to a bearer token.
	Authorization string `json:"authorization,omitempty"`
	// AllowedTools and RequireApproval have the forms of the request's mcp
	// tool (require_approval defaults to "always", as OpenAI's).
	AllowedTools    json.RawMessage `json:"allowed_tools,omitempty"`
	RequireApproval json.RawMessage `json:"require_approval,omitempty"`
}

// IsSecretRef reports whether ref names a secret Lambent can read.
func IsSecretRef(ref string) bool {
	return strings.HasPrefix(ref, SecretSSM) && len(ref) > len(SecretSSM) ||
		strings.HasPrefix(ref, SecretSecretsManager) && len(ref) > len(SecretSecretsManager)
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
		case BackingMCP:
			if err := checkMCPBacking(&t.Backing); err != nil {
				return nil, fmt.Errorf("tools: manifest tool %q: %w", t.Name, err)
			}
		default:
			return nil, fmt.Errorf("tools: manifest tool %q: unknown backing type %q (want local, lambda or mcp)", t.Name, t.Backing.Type)
		}
	}
	return &m, nil
}

// Definition returns the tool's definition, filling description and
// parameters from fallback where the manifest leaves them out.
func (t ManifestTool) Definition(fallback tooldef.ToolDefinition) tooldef.ToolDefinition {
	d := tooldef.ToolDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	if d.Description == "" {
		d.Description = fallback.Description
	}
	if len(d.Parameters) == 0 {
		d.Parameters = fallback.Parameters
	}
	return d
}

func checkMCPBacking(b *Backing) error {
	switch b.Transport {
	case "", MCPStreamableHTTP, MCPSSE:
		if b.URL == "" {
			return errors.New("an mcp backing needs a url")
		}
	case MCPStdio:
		if len(b.Command) == 0 {
			return errors.New("a stdio mcp backing needs a command")
		}
	default:
		return fmt.Errorf("unknown mcp transport %q (want streamable_http, sse or stdio)", b.Transport)
	}
	for h, ref := range b.SecretHeaders {
		if !IsSecretRef(ref) {
			return fmt.Errorf("secret_headers[%q] must be a secret reference (%s<parameter> or %s<secret id>)", h, SecretSSM, SecretSecretsManager)
		}
	}
	if b.Authorization != "" && !IsSecretRef(b.Authorization) {
		return fmt.Errorf("authorization must be a secret reference (%s<parameter> or %s<secret id>)", SecretSSM, SecretSecretsManager)
	}
	if _, err := ParseMCPAllowedTools(b.AllowedTools); err != nil {
		return fmt.Errorf("allowed_tools: %w", err)
	}
	if _, err := ParseMCPApproval(b.RequireApproval); err != nil {
		return fmt.Errorf("require_approval: %w", err)
	}
	return nil
}

// MCPServer returns the manifest MCP server t with its secrets resolved by
// secret (called once per reference, at start-up).
func (t ManifestTool) MCPServer(ctx context.Context, secret func(ctx context.Context, ref string) (string, error)) (*MCPServer, error) {
	b := t.Backing
	allowed, err := ParseMCPAllowedTools(b.AllowedTools)
	if err != nil {
		return nil, fmt.Errorf("tools: manifest tool %q: allowed_tools: %w", t.Name, err)
	}
	approval, err := ParseMCPApproval(b.RequireApproval)
	if err != nil {
		return nil, fmt.Errorf("tools: manifest tool %q: require_approval: %w", t.Name, err)
	}
	s := &MCPServer{Label: t.Name, Description: t.Description, URL: b.URL, Transport: b.Transport, Command: b.Command,
		Trusted: true, Allowed: allowed, Approval: approval}
	if s.Transport == "" {
		s.Transport = MCPStreamableHTTP
	}
	if len(b.Headers)+len(b.SecretHeaders) > 0 {
		s.Headers = make(map[string]string, len(b.Headers)+len(b.SecretHeaders))
	}
	for h, v := range b.Headers {
		s.Headers[h] = v
	}
	for h, ref := range b.SecretHeaders {
		v, err := secret(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("tools: manifest tool %q: header %s: %w", t.Name, h, err)
		}
		s.Headers[h] = v
	}
	if b.Authorization != "" {
		if s.Authorization, err = secret(ctx, b.Authorization); err != nil {
			return nil, fmt.Errorf("tools: manifest tool %q: authorization: %w", t.Name, err)
		}
	}
	return s, nil
}
