package tenant

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"strings"
)

// The tenant rule, the one place every front door (the HTTP API on a
// function URL, a REST or HTTP API, or locally; the API Gateway WebSocket
// API's $connect) asks whom a request belongs to:
//
//  1. a request the front door authenticated with AWS IAM (SigV4) belongs
//     to the caller's IAM identity (see [IAMMode]) and needs no API key:
//     keys guard the front doors whose auth is NONE;
//  2. otherwise, when API keys are configured, the request's bearer key
//     must be one of them and its tenant is the key's;
//  3. otherwise (no keys: local runs) it belongs to [Default].

// IAMMode says which part of a caller's IAM identity is its tenant
// (LAMBENT_IAM_TENANT).
type IAMMode string

// Values of IAMMode.
const (
	// IAMARN: the tenant is the caller's ARN as the front door reports it,
	// for a role session arn:aws:sts::<account>:assumed-role/<role>/<session>
	// (the default, and the behaviour before the setting existed, so stored
	// responses keep their owner). Every session is its own tenant: the
	// session name is whatever the caller passed to AssumeRole.
	IAMARN IAMMode = "arn"
	// IAMRole: a role session's tenant is its role,
	// arn:aws:sts::<account>:assumed-role/<role> (the session name
	// dropped); every session of the role shares its responses. Other
	// identities (IAM users, the root user, federated users) keep their
	// ARN, and a bare caller id "AROA…:<session>" becomes "AROA…".
	//
	// Why not the role's IAM ARN (arn:aws:iam::<account>:role/<path><role>):
	// the session ARN does not carry the role's path, so that ARN cannot be
	// built from it without an IAM call; role names are unique in an
	// account, so the assumed-role ARN without the session names the role
	// exactly.
	IAMRole IAMMode = "role"
)

// ParseIAMMode reads a LAMBENT_IAM_TENANT value; empty is IAMARN.
func ParseIAMMode(s string) (IAMMode, error) {
	switch m := IAMMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return IAMARN, nil
	case IAMARN, IAMRole:
		return m, nil
	}
	return "", fmt.Errorf("unknown IAM tenant mode %q (want %q or %q)", s, IAMARN, IAMRole)
}

// CallerOf is the caller identity of an AWS_IAM-authorized event: the
// caller's ARN (userArn), else its caller id (callerId, e.g.
// "AROA…:session" for a role session), as every front door reports them.
func CallerOf(userARN, callerID string) string {
	return cmp.Or(userARN, callerID)
}

// Keyring maps the SHA-256 of each API key to its tenant, so a lookup
// neither keeps nor compares the keys themselves. A nil Keyring is no keys
// configured.
type Keyring map[[sha256.Size]byte]string

// NewKeyring returns the keyring of keys (API key → tenant); nil when
// keys is empty.
func NewKeyring(keys map[string]string) Keyring {
	if len(keys) == 0 {
		return nil
	}
	k := make(Keyring, len(keys))
	for key, tenant := range keys {
		k[sha256.Sum256([]byte(key))] = tenant
	}
	return k
}

// Errors of [Rule.Resolve]: the request is refused (401). Their text is
// OpenAI's message for the client.
const (
	// ErrNoKey: keys are configured and the request sent none.
	ErrNoKey = refusal("You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY'.")
	// ErrWrongKey: the request's key is not one of the configured keys.
	ErrWrongKey = refusal("Incorrect API key provided.")
)

// refusal is an error of Rule.Resolve: its text is the client's message.
type refusal string

// Error implements error.
func (r refusal) Error() string { return string(r) }

// Rule is the tenant rule of a gateway: its API keys and how it names IAM
// callers. The zero Rule accepts every request (no keys) and names IAM
// callers by their ARN.
type Rule struct {
	// Keys are the API keys (nil: none configured).
	Keys Keyring
	// IAM names IAM callers (empty: IAMARN).
	IAM IAMMode
}

// Resolve returns the tenant of a request whose front door authenticated
// caller (empty when none: a NONE front door, a local run) and whose
// Authorization header is authorization; or ErrNoKey or ErrWrongKey, for
// a 401.
func (r Rule) Resolve(caller, authorization string) (string, error) {
	if caller != "" {
		return r.iamTenant(caller), nil
	}
	if r.Keys == nil {
		return Default, nil
	}
	key, ok := bearer(authorization)
	if !ok {
		return "", ErrNoKey
	}
	if name, known := r.Keys[sha256.Sum256([]byte(key))]; known {
		return name, nil
	}
	return "", ErrWrongKey
}

// RequiresKeys reports whether a request without an IAM caller needs a key.
func (r Rule) RequiresKeys() bool { return r.Keys != nil }

// iamTenant is the tenant of an IAM caller under r.IAM.
func (r Rule) iamTenant(caller string) string {
	if r.IAM != IAMRole {
		return caller
	}
	// arn:<partition>:sts::<account>:assumed-role/<role>/<session>: role
	// names cannot hold '/', so the session is what follows the second.
	if arn, ok := strings.CutPrefix(caller, "arn:"); ok {
		// <partition>:<service>:<region>:<account>:<resource>
		_, arn, _ = strings.Cut(arn, ":")
		service, arn, _ := strings.Cut(arn, ":")
		_, arn, _ = strings.Cut(arn, ":")
		_, resource, _ := strings.Cut(arn, ":")
		if rest, ok := strings.CutPrefix(resource, "assumed-role/"); ok && service == "sts" {
			if role, _, found := strings.Cut(rest, "/"); found && role != "" {
				return caller[:len(caller)-len(rest)+len(role)]
			}
		}
		return caller
	}
	// A caller id: "<unique id of the role>:<session>" for a role session,
	// role unique ids starting with AROA (an IAM user's caller id is its
	// unique id alone, a federated user's "<account>:<name>").
	if id, _, found := strings.Cut(caller, ":"); found && strings.HasPrefix(id, "AROA") {
		return id
	}
	return caller
}

// bearer returns the token of an Authorization header with the Bearer
// scheme, whose name is case-insensitive (RFC 7235 section 2.1) and may be
// followed by more than one space.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}
