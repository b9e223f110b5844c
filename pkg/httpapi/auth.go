package httpapi

import (
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// keyring maps the SHA-256 of each API key to its tenant, so a lookup
// neither keeps nor compares the keys themselves.
type keyring map[[sha256.Size]byte]string

func newKeyring(keys map[string]string) keyring {
	if len(keys) == 0 {
		return nil
	}
	k := make(keyring, len(keys))
	for key, tenant := range keys {
		k[sha256.Sum256([]byte(key))] = tenant
	}
	return k
}

// authenticate scopes the request to its tenant. A request the front door
// authenticated with AWS IAM (it carries a tenant.Caller) belongs to the
// caller's IAM ARN and needs no key: API keys guard the front doors whose
// auth is NONE. Otherwise, when keys are configured, the request's bearer
// key must be one of them and its tenant is the key's. It writes the 401
// itself.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if arn, ok := tenant.Caller(r.Context()); ok {
		return r.WithContext(tenant.With(r.Context(), arn)), true
	}
	if h.keys == nil {
		return r, true
	}
	key, ok := bearer(r.Header.Get("Authorization"))
	name, known := h.keys[sha256.Sum256([]byte(key))]
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lambent"`)
		msg := "Incorrect API key provided."
		if !ok {
			msg = "You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY'."
		}
		h.writeError(w, &api.Error{Status: http.StatusUnauthorized, Type: api.ErrTypeInvalidRequest, Code: "invalid_api_key", Message: msg})
		return r, false
	}
	return r.WithContext(tenant.With(r.Context(), name)), true
}

// bearer returns the token of an Authorization header with the Bearer
// scheme, whose name is case-insensitive (RFC 7235 section 2.1) and may be
// followed by more than one space.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}
