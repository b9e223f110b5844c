package app

import (
	"fmt"
	"strings"

	"github.com/lambent/lambent/pkg/tenant"
)

// Environment names of the gateway's own API keys.
const (
	// EnvAPIKeys lists the accepted bearer keys (local runs, tests).
	EnvAPIKeys = "LAMBENT_API_KEYS"
	// EnvAPIKeysSSM names an SSM SecureString parameter holding that list.
	EnvAPIKeysSSM = "LAMBENT_API_KEYS_SSM"
)

// ParseAPIKeys reads an API key list: entries separated by commas or
// newlines, each "key" (tenant "default") or "tenant=key". Tenants are
// letters, digits, '_' and '-'; keys at least 16 characters.
func ParseAPIKeys(list string) (map[string]string, error) {
	keys := map[string]string{}
	for i, entry := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, key, found := strings.Cut(entry, "=")
		if !found {
			name, key = tenant.Default, entry
		}
		name, key = strings.TrimSpace(name), strings.TrimSpace(key)
		if !validTenant(name) {
			// Not quoted: it may be a key's part before an '=' (base64).
			return nil, fmt.Errorf("API keys: entry %d: what comes before its '=' is no tenant name (letters, digits, '_' and '-'); a key holding '=' needs its tenant (tenant=key)", i+1)
		}
		if !validKey(key) {
			return nil, fmt.Errorf("API keys: the key of tenant %q is shorter than 16 characters or has spaces", name)
		}
		if other, dup := keys[key]; dup && other != name {
			return nil, fmt.Errorf("API keys: one key is listed for tenants %q and %q", other, name)
		}
		keys[key] = name
	}
	return keys, nil
}

func validTenant(t string) bool {
	if t == "" || len(t) > 64 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validKey reports whether key is long enough to be a secret (16
// characters) and holds no spaces: an API key, the metrics key.
func validKey(key string) bool {
	return len(key) >= 16 && !strings.ContainsAny(key, " \t")
}
