package httpapi

import (
	"net/http"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// authenticate scopes the request to its tenant by the tenant rule
// (tenant.Rule): a request the front door authenticated with AWS IAM (it
// carries a tenant.Caller) belongs to the caller and needs no key;
// otherwise, when keys are configured, the request's bearer key must be
// one of them. It writes the 401 itself.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	caller, _ := tenant.Caller(r.Context())
	if caller == "" && !h.tenants.RequiresKeys() {
		return r, true
	}
	name, err := h.tenants.Resolve(caller, r.Header.Get("Authorization"))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lambent"`)
		h.writeError(w, r, api.Unauthorized(err.Error()))
		return r, false
	}
	return r.WithContext(tenant.With(r.Context(), name)), true
}
