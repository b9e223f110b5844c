package api

import (
	"errors"
	"strings"
	"testing"
)

// Body is the envelope of the error as a client sees it: an internal
// error's message names the request id once, a 4xx is as it is.
func TestErrorBody(t *testing.T) {
	got := string(ServerError(errors.New("disk on fire"), "The connection could not be opened.").Body("req_1"))
	if strings.Count(got, "req_1") != 1 || strings.Contains(got, "disk on fire") || !strings.HasPrefix(got, `{"error":{"message":"The connection could not be opened.`) {
		t.Fatalf("Body = %s, want the envelope naming req_1 once, without the cause", got)
	}
	if got, want := string(InvalidRequest("input", "bad").Body("req_1")), `{"error":{"message":"bad","type":"invalid_request_error","param":"input","code":null}}`; got != want {
		t.Fatalf("Body = %s, want %s", got, want)
	}
}
