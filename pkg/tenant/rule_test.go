package tenant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/tenant"
)

func TestRuleResolve(t *testing.T) {
	const key = "sk-lambent-acme-0123456789"
	const arn = "arn:aws:sts::111122223333:assumed-role/lambent-client/session-1"
	keys := tenant.Rule{Keys: tenant.NewKeyring(map[string]string{key: "acme"})}
	for name, c := range map[string]struct {
		rule           tenant.Rule
		caller, header string
		want           string
		err            error
	}{
		"no keys, no caller":          {tenant.Rule{}, "", "", tenant.Default, nil},
		"no keys, a key is ignored":   {tenant.Rule{}, "", "Bearer whatever", tenant.Default, nil},
		"no keys, IAM caller":         {tenant.Rule{}, arn, "", arn, nil},
		"keys, IAM caller needs none": {keys, arn, "", arn, nil},
		"keys, IAM caller wins":       {keys, arn, "Bearer " + key, arn, nil},
		"keys, listed key":            {keys, "", "Bearer " + key, "acme", nil},
		"keys, scheme any case":       {keys, "", "bEaReR   " + key + " ", "acme", nil},
		"keys, no header":             {keys, "", "", "", tenant.ErrNoKey},
		"keys, other scheme":          {keys, "", "Basic " + key, "", tenant.ErrNoKey},
		"keys, bare key":              {keys, "", key, "", tenant.ErrNoKey},
		"keys, wrong key":             {keys, "", "Bearer sk-other-0123456789", "", tenant.ErrWrongKey},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := c.rule.Resolve(c.caller, c.header)
			require.ErrorIs(t, err, c.err)
			assert.Equal(t, c.want, got)
		})
	}
	assert.True(t, keys.RequiresKeys())
	assert.False(t, tenant.Rule{}.RequiresKeys())
}

// LAMBENT_IAM_TENANT=role names a role session by its role; arn (the
// default) keeps the whole ARN, session included.
func TestRuleIAMMode(t *testing.T) {
	for caller, want := range map[string]string{
		"arn:aws:sts::111122223333:assumed-role/lambent-client/session-1":         "arn:aws:sts::111122223333:assumed-role/lambent-client",
		"arn:aws:sts::111122223333:assumed-role/lambent-client/other@example.com": "arn:aws:sts::111122223333:assumed-role/lambent-client",
		"arn:aws-cn:sts::111122223333:assumed-role/AWSReservedSSO_Dev_0123/alice": "arn:aws-cn:sts::111122223333:assumed-role/AWSReservedSSO_Dev_0123",
		"arn:aws:iam::111122223333:user/alice":                                    "arn:aws:iam::111122223333:user/alice",
		"arn:aws:iam::111122223333:root":                                          "arn:aws:iam::111122223333:root",
		"arn:aws:sts::111122223333:federated-user/bob":                            "arn:aws:sts::111122223333:federated-user/bob",
		"arn:aws:sts::111122223333:assumed-role/no-session":                       "arn:aws:sts::111122223333:assumed-role/no-session",
		"AROAEXAMPLEROLEID:session-1":                                             "AROAEXAMPLEROLEID",
		"AIDAEXAMPLEUSERID":                                                       "AIDAEXAMPLEUSERID",
		"111122223333:bob":                                                        "111122223333:bob",
	} {
		got, err := tenant.Rule{IAM: tenant.IAMRole}.Resolve(caller, "")
		require.NoError(t, err)
		assert.Equal(t, want, got, "role mode, %s", caller)
		got, err = tenant.Rule{IAM: tenant.IAMARN}.Resolve(caller, "")
		require.NoError(t, err)
		assert.Equal(t, caller, got, "arn mode, %s", caller)
	}
	for in, want := range map[string]tenant.IAMMode{"": tenant.IAMARN, "arn": tenant.IAMARN, " Role ": tenant.IAMRole} {
		got, err := tenant.ParseIAMMode(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := tenant.ParseIAMMode("session")
	require.Error(t, err)
}

func TestCallerOf(t *testing.T) {
	assert.Equal(t, "arn:x", tenant.CallerOf("arn:x", "AROA:s"))
	assert.Equal(t, "AROA:s", tenant.CallerOf("", "AROA:s"))
	assert.Empty(t, tenant.CallerOf("", ""))
}

// BenchmarkResolve is the tenant rule's cost on a request: a key looked up
// (SHA-256 of the key), an IAM caller by ARN and by role.
func BenchmarkResolve(b *testing.B) {
	const key = "sk-lambent-acme-0123456789"
	const arn = "arn:aws:sts::111122223333:assumed-role/lambent-client/session-1"
	keys := tenant.Rule{Keys: tenant.NewKeyring(map[string]string{key: "acme", "sk-lambent-other-0123456789": "other"})}
	for name, c := range map[string]struct {
		rule           tenant.Rule
		caller, header string
	}{
		"key":      {keys, "", "Bearer " + key},
		"iam-arn":  {tenant.Rule{}, arn, ""},
		"iam-role": {tenant.Rule{IAM: tenant.IAMRole}, arn, ""},
	} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if _, err := c.rule.Resolve(c.caller, c.header); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
