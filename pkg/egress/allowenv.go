package egress

import "strings"

// AllowHostsEnv is the setting of the allow-list (New's allow) of every
// guard of the gateway and of the fetch_url tool Lambda: comma-separated
// host names, host:port pairs, IP addresses and CIDR ranges.
const AllowHostsEnv = "LAMBENT_FETCH_ALLOW_HOSTS"

// AllowHostsFromEnv reads the allow-list of AllowHostsEnv with getenv
// (HostList).
func AllowHostsFromEnv(getenv func(string) string) []string {
	return HostList(getenv(AllowHostsEnv))
}

// HostList splits v, a setting's comma-separated hosts, into its entries,
// trimmed, empty ones dropped (nil when there is none).
func HostList(v string) []string {
	var out []string
	for h := range strings.SplitSeq(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
