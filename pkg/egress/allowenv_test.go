package egress

import (
	"reflect"
	"testing"
)

func TestAllowHostsFromEnv(t *testing.T) {
	env := map[string]string{AllowHostsEnv: " 127.0.0.1:8080, localhost ,,10.0.0.0/8"}
	if got, want := AllowHostsFromEnv(func(k string) string { return env[k] }), []string{"127.0.0.1:8080", "localhost", "10.0.0.0/8"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("AllowHostsFromEnv = %q, want %q", got, want)
	}
	if got := AllowHostsFromEnv(func(string) string { return "" }); got != nil {
		t.Fatalf("AllowHostsFromEnv of nothing = %q, want none", got)
	}
}
