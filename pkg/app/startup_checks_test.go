package app

import (
	"context"
	"strings"
	"testing"
)

// mapSSM is an SSM client answering from a map.
type mapSSM map[string]string

func (s mapSSM) GetParameter(_ context.Context, name string) (string, error) { return s[name], nil }

// A key list that is given but holds no key (a value of separators) is a
// start-up error: read as no keys, it left the API needing none. A blank
// LAMBENT_API_KEYS is unset: the SSM parameter named beside it is read.
func TestKeyListsWithoutKeysRefused(t *testing.T) {
	resolve := func(env map[string]string, params mapSSM) (Config, error) {
		var cfg Config
		err := ResolveSecretsWith(context.Background(), &cfg, func(k string) string { return env[k] }, params)
		return cfg, err
	}
	if _, err := resolve(map[string]string{EnvAPIKeysSSM: "/lambent/api-keys"}, mapSSM{"/lambent/api-keys": ",\n"}); err == nil || !strings.Contains(err.Error(), "holds no key") {
		t.Errorf("an SSM key list without keys: %v", err)
	}
	if _, err := resolve(map[string]string{EnvAPIKeys: ","}, nil); err == nil {
		t.Error("LAMBENT_API_KEYS=\",\" accepted")
	}
	if _, err := resolve(map[string]string{EnvCompactionKeys: " , "}, nil); err == nil {
		t.Error("LAMBENT_COMPACTION_KEYS=\" , \" accepted")
	}
	cfg, err := resolve(map[string]string{EnvAPIKeys: " ", EnvAPIKeysSSM: "/lambent/api-keys"}, mapSSM{"/lambent/api-keys": "t1=0123456789abcdef0123"})
	if err != nil || len(cfg.Security.APIKeys) != 1 {
		t.Errorf("a blank LAMBENT_API_KEYS beside LAMBENT_API_KEYS_SSM: %v, keys %v", err, cfg.Security.APIKeys)
	}
}

// LAMBENT_LOG_LEVEL takes the four documented values; a typo is a
// start-up error, not info.
func TestLogLevelChecked(t *testing.T) {
	for _, v := range []string{"debug", "INFO", "warn", "error"} {
		if _, err := FromEnv(func(k string) string { return map[string]string{"LAMBENT_LOG_LEVEL": v}[k] }); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	if _, err := FromEnv(func(k string) string { return map[string]string{"LAMBENT_LOG_LEVEL": "degub"}[k] }); err == nil {
		t.Error("LAMBENT_LOG_LEVEL=degub accepted")
	}
}
