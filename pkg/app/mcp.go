package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tools"
)

// SecretsManagerClient reads Secrets Manager secrets
// (*awsjson.SecretsManager): GetSecretValue returns the SecretString of the
// secret id.
type SecretsManagerClient interface {
	GetSecretValue(ctx context.Context, id string) (string, error)
}

// secretReader reads the secret references of the manifest's MCP servers
// ("ssm:<parameter>", "secretsmanager:<secret id>[#<json key>]"), each
// once, through clients made when first needed.
type secretReader struct {
	ssm    SSMClient
	sm     SecretsManagerClient
	aws    func() (aws.Config, error) // the app's AWS configuration (App.AWS)
	mu     sync.Mutex
	values map[string]string
}

func (r *secretReader) read(ctx context.Context, ref string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.values[ref]; ok {
		return v, nil
	}
	var v string
	var err error
	switch {
	case strings.HasPrefix(ref, tools.SecretSSM):
		if r.ssm == nil {
			cfg, err := r.aws()
			if err != nil {
				return "", err
			}
			c, err := awsjson.NewSSM(cfg)
			if err != nil {
				return "", err
			}
			r.ssm = c
		}
		v, err = getParameter(ctx, r.ssm, strings.TrimPrefix(ref, tools.SecretSSM))
	case strings.HasPrefix(ref, tools.SecretSecretsManager):
		v, err = r.secret(ctx, strings.TrimPrefix(ref, tools.SecretSecretsManager))
	default:
		err = errors.New("not a secret reference")
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	v = strings.TrimSpace(v)
	if r.values == nil {
		r.values = map[string]string{}
	}
	r.values[ref] = v
	return v, nil
}

// secret reads a Secrets Manager secret's SecretString, or with "#key" one
// string field of a JSON secret.
func (r *secretReader) secret(ctx context.Context, ref string) (string, error) {
	id, key, hasKey := strings.Cut(ref, "#")
	if r.sm == nil {
		cfg, err := r.aws()
		if err != nil {
			return "", err
		}
		c, err := awsjson.NewSecretsManager(cfg)
		if err != nil {
			return "", err
		}
		r.sm = c
	}
	v, err := r.sm.GetSecretValue(ctx, id)
	if err != nil {
		return "", err
	}
	if hasKey {
		var fields map[string]any
		if err := json.Unmarshal([]byte(v), &fields); err != nil {
			return "", errors.New("the secret is not a JSON object, so it has no key " + key)
		}
		s, ok := fields[key].(string)
		if !ok {
			return "", errors.New("the secret has no string field " + key)
		}
		v = s
	}
	if strings.TrimSpace(v) == "" {
		return "", errEmptyParameter
	}
	return v, nil
}

// mcpServers returns the manifest's MCP servers by name with their secrets
// read, and their entries for the list of tools on offer.
func mcpServers(ctx context.Context, m *tools.Manifest, opts *Options, awsConfig func() (aws.Config, error)) (map[string]*tools.MCPServer, []api.ToolDefinition, error) {
	r := &secretReader{ssm: opts.SSM, sm: opts.SecretsManager, aws: awsConfig}
	var servers map[string]*tools.MCPServer
	var defs []api.ToolDefinition
	for _, t := range m.Tools {
		if t.Backing.Type != tools.BackingMCP {
			continue
		}
		s, err := t.MCPServer(ctx, r.read)
		if err != nil {
			return nil, nil, err
		}
		if servers == nil {
			servers = map[string]*tools.MCPServer{}
		}
		servers[t.Name] = s
		defs = append(defs, api.ToolDefinition{Name: t.Name, Description: t.Description})
	}
	return servers, defs, nil
}
