package egress

import "strings"

// AllowHostsEnv is the setting of the allow-list (New's allow) of every
// guard of the gateway and of the fetch_url tool Lambda: comma-separated
// host names, host:port pairs, IP addresses and CIDR ranges.
const AllowHostsEnv = "LAMBENT_FETCH_ALLOW_HOSTS"

// AllowHostsFromEnv reads the allow-list of AllowHostsEnv with getenv:
// its entries trimmed, empty ones dropped (nil when there is none).
func AllowHostsFromEnv(getenv func(string) string) []string {
	var out []string
	for h := range strings.SplitSeq(getenv(AllowHostsEnv), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
