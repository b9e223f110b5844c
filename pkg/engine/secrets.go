package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// The secrets of a request's MCP tools (headers, authorization, the query
// of server_url) are never stored in plain text: the response's tools never
// hold them (the URL is shown as tools.RedactMCPURL has it), and a
// background request is stored without them, sealed beside it
// (store.Job.Secrets) with the engine's key and the response's tenant and
// id as additional data, so that the worker that runs it for that tenant,
// and no one reading the store, can open them: a job stored again under
// another tenant (a record replayed, an id reused) does not open. Blobs
// sealed by releases before the tenant was bound (the id alone) do not
// open either: their jobs fail with secrets_unavailable (a fallback to
// the id alone would open any such blob under any tenant). A continuation gets none of them from the store: a
// request sends its tools again, secrets included (as OpenAI requires).

// toolSecrets are the secrets of the request's tool at Index; ServerURL is
// its whole server_url when that has a query (or fragment) to hide.
type toolSecrets struct {
	Index         int               `json:"index"`
	Headers       map[string]string `json:"headers,omitempty"`
	Authorization string            `json:"authorization,omitempty"`
	ServerURL     string            `json:"server_url,omitempty"`
}

// hideSecrets removes t's secrets: headers, token, server_url's query.
func hideSecrets(t *api.Tool) {
	t.Headers, t.Authorization = nil, ""
	t.ServerURL = tools.RedactMCPURL(t.ServerURL)
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
// id of tenant t: they open for that tenant's response only, and never as
// a compaction blob. The tenant's length makes the pair unambiguous.
func secretsContext(t, id string) string {
	return fmt.Sprintf("mcp-secrets/v2\x00%d:%s\x00%s", len(t), t, id)
}

// sealSecrets returns req without its tools' secrets and the secrets sealed
// for the response id of ctx's tenant; req itself is not changed. Without
// secrets it returns req and nil.
func (e *Engine) sealSecrets(ctx context.Context, req *api.CreateResponseRequest, id string) (*api.CreateResponseRequest, []byte, error) {
	var secrets []toolSecrets
	for i, t := range req.Tools {
		s := toolSecrets{Index: i, Headers: t.Headers, Authorization: t.Authorization}
		if tools.RedactMCPURL(t.ServerURL) != t.ServerURL {
			s.ServerURL = t.ServerURL
		}
		if len(s.Headers) > 0 || s.Authorization != "" || s.ServerURL != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		return req, nil, nil
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: seal secrets: %w", err)
	}
	blob, err := e.secrets.Seal(secretsContext(tenant.From(ctx), id), string(plain))
	if err != nil {
		return nil, nil, fmt.Errorf("engine: seal secrets: %w", err)
	}
	stored := *req
	stored.Tools = slices.Clone(req.Tools)
	for _, s := range secrets {
		hideSecrets(&stored.Tools[s.Index])
	}
	return &stored, []byte(blob), nil
}

// errSecretsUnavailable: the worker cannot open a background request's
// sealed secrets.
var errSecretsUnavailable = errors.New("the MCP secrets of this background request cannot be opened here: " +
	"the gateway and the worker need the same LAMBENT_SECRET_KEY, the job must run for the tenant that created it, " +
	"and jobs queued by a release before secrets were bound to their tenant must be created again")

// openSecrets returns the stored request req with the sealed secrets of the
// response id of ctx's tenant put back; req itself is not changed.
func (e *Engine) openSecrets(ctx context.Context, req *api.CreateResponseRequest, sealed []byte, id string) (*api.CreateResponseRequest, error) {
	if len(sealed) == 0 {
		return req, nil
	}
	plain, err := e.secrets.Open(secretsContext(tenant.From(ctx), id), string(sealed))
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
		if s.ServerURL != "" {
			open.Tools[s.Index].ServerURL = s.ServerURL
		}
	}
	return &open, nil
}
