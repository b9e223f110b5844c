package httpapi

import (
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// Keyring maps the SHA-256 of each API key to its tenant, so a lookup
// neither keeps nor compares the keys themselves. A nil Keyring accepts
// every request (no keys configured).
type Keyring map[[sha256.Size]byte]string

// NewKeyring returns the keyring of keys (API key → tenant); nil when
// keys is empty.
func NewKeyring(keys map[string]string) Keyring {
	if len(keys) == 0 {
		return nil
	}
	k := make(Keyring, len(keys))
	for key, tenant := range keys {
		k[sha256.Sum256([]byte(key))] = tenant
	}
	return k
}

// Tenant returns the tenant of the bearer key in an Authorization header
// value, or the 401 error to answer. A nil Keyring returns the default
// tenant.
func (k Keyring) Tenant(authorization string) (string, *api.Error) {
	if k == nil {
		return tenant.Default, nil
	}
	key, ok := bearer(authorization)
	name, known := k[sha256.Sum256([]byte(key))]
	if ok && known {
		return name, nil
	}
	msg := "Incorrect API key provided."
	if !ok {
		msg = "You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY'."
	}
	return "", &api.Error{Status: http.StatusUnauthorized, Type: api.ErrTypeInvalidRequest, Code: "invalid_api_key", Message: msg}
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
	name, err := h.keys.Tenant(r.Header.Get("Authorization"))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lambent"`)
		h.writeError(w, r, err)
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
