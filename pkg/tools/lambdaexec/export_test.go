package lambdaexec

import "net/http"

// NewHTTPClientOver returns NewHTTPClient's client over tr, so that a test
// can dial through connections it watches.
func NewHTTPClientOver(tr *http.Transport) *HTTPClient { return newHTTPClient(tr) }
