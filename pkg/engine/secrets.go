package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/compaction"
)

// The secrets of a request's MCP tools (headers, authorization) are never
// stored in plain text: the response's tools never hold them, and a
// background request is stored without them, sealed beside it
// (store.Job.Secrets) with the engine's key and the response id as
// additional data, so that the worker that runs it, and no one reading the
// store, can open them.

// toolSecrets are the secrets of the request's tool at Index.
type toolSecrets struct {
	Index         int               `json:"index"`
	Headers       map[string]string `json:"headers,omitempty"`
	Authorization string            `json:"authorization,omitempty"`
}

// secretsKeyring is the keyring of key (32 bytes), or of a fresh random
// key when key is empty. It is the compaction package's keyring: one
// implementation of sealing for every blob the gateway stores.
func secretsKeyring(key []byte) (*compaction.Keyring, error) {
	if len(key) == 0 {
		return compaction.NewDevKeyring()
	}
	k, err := compaction.NewKeyring(compaction.Key{ID: "mcp", Secret: key})
	if err != nil {
		return nil, fmt.Errorf("engine: secret key: %w", err)
	}
	return k, nil
}

// secretsContext is the authenticated context of the secrets of response
// id: they open for that response only, and never as a compaction blob.
func secretsContext(id string) string { return "mcp-secrets\x00" + id }

// sealSecrets returns req without its tools' secrets and the secrets sealed
// for the response id; req itself is not changed. Without secrets it
// returns req and nil.
func (e *Engine) sealSecrets(req *api.CreateResponseRequest, id string) (*api.CreateResponseRequest, []byte, error) {
	var secrets []toolSecrets
	for i, t := range req.Tools {
		if len(t.Headers) > 0 || t.Authorization != "" {
			secrets = append(secrets, toolSecrets{Index: i, Headers: t.Headers, Authorization: t.Authorization})
		}
	}
	if len(secrets) == 0 {
		return req, nil, nil
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: seal secrets: %w", err)
	}
	blob, err := e.secrets.Seal(secretsContext(id), string(plain))
	if err != nil {
		return nil, nil, fmt.Errorf("engine: seal secrets: %w", err)
	}
	stored := *req
	stored.Tools = slices.Clone(req.Tools)
	for _, s := range secrets {
		stored.Tools[s.Index].Headers, stored.Tools[s.Index].Authorization = nil, ""
	}
	return &stored, []byte(blob), nil
}

// errSecretsUnavailable: the worker cannot open a background request's
// sealed secrets.
var errSecretsUnavailable = errors.New("the MCP secrets of this background request cannot be opened here: the gateway and the worker need the same LAMBENT_SECRET_KEY")

// openSecrets returns the stored request req with the sealed secrets of the
// response id put back; req itself is not changed.
func (e *Engine) openSecrets(req *api.CreateResponseRequest, sealed []byte, id string) (*api.CreateResponseRequest, error) {
	if len(sealed) == 0 {
		return req, nil
	}
	plain, err := e.secrets.Open(secretsContext(id), string(sealed))
	if err != nil {
		return nil, errSecretsUnavailable
	}
	var secrets []toolSecrets
	if err := json.Unmarshal([]byte(plain), &secrets); err != nil {
		return nil, fmt.Errorf("engine: open secrets: %w", err)
	}
	open := *req
	open.Tools = slices.Clone(req.Tools)
	for _, s := range secrets {
		if s.Index < 0 || s.Index >= len(open.Tools) {
			return nil, errSecretsUnavailable
		}
		open.Tools[s.Index].Headers, open.Tools[s.Index].Authorization = s.Headers, s.Authorization
	}
	return &open, nil
}
