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
// one of them: else it fails with a 401.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	caller, _ := tenant.Caller(r.Context())
	if caller == "" && !h.tenants.RequiresKeys() {
		return r, nil
	}
	name, err := h.tenants.Resolve(caller, r.Header.Get("Authorization"))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lambent"`)
		return r, api.Unauthorized(err.Error())
	}
	return r.WithContext(tenant.With(r.Context(), name)), nil
}
