// Package compaction seals the summaries POST /v1/responses/compact and
// server-side compaction (context_management) produce into the
// encrypted_content of a compaction item, and opens them again when a
// later request sends the item back. What a sealed text holds is the
// engine's business. The engine seals the MCP
// secrets of stored background requests with the same keyring type (under
// its own context, so neither kind of blob opens as the other).
//
// A blob is "<key id>.<base64url(nonce || AES-256-GCM ciphertext)>": the key
// id names the key that sealed it, so a keyring holding old keys besides
// the current one keeps old blobs readable across a key rotation. The
// authenticated data binds a blob to its tenant: a blob sealed for one
// tenant does not open for another. The package depends on the standard
// library only.
package compaction

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/lambent/lambent/internal/textcut"
)

// KeySize is the size of a key in bytes (AES-256).
const KeySize = 32

// maxKeyID bounds a key id's length.
const maxKeyID = 32

// aadPrefix starts the authenticated data of every blob; it names the
// format so that the keys, if ever used for anything else, cannot open a
// compaction blob there or the reverse.
const aadPrefix = "lambent compaction v1\x00"

// ErrInvalid is the error of every blob that does not open: altered,
// truncated, not base64, sealed for another tenant, or sealed with a key
// the keyring does not hold. The wrapping error says which.
var ErrInvalid = errors.New("invalid compaction blob")

// Key is one sealing key.
type Key struct {
	// ID names the key inside the blobs it seals: 1 to 32 characters of
	// A-Z, a-z, 0-9, '_' and '-'.
	ID string
	// Secret is the AES-256 key (KeySize bytes).
	Secret []byte
}

// Keyring seals with its first key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	sealID string
	aeads  map[string]cipher.AEAD
}

// NewKeyring returns a keyring that seals with keys[0] and opens blobs of
// every key given.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("compaction: no keys")
	}
	k := &Keyring{sealID: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, key := range keys {
		if !validID(key.ID) {
			return nil, fmt.Errorf("compaction: invalid key id %q: use 1 to %d characters of A-Z, a-z, 0-9, '_' and '-'", key.ID, maxKeyID)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("compaction: key id %q given twice", key.ID)
		}
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("compaction: key %q has %d bytes, want %d (AES-256)", key.ID, len(key.Secret), KeySize)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, fmt.Errorf("compaction: key %q: %w", key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("compaction: key %q: %w", key.ID, err)
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

// ParseKeys reads a key list: comma- or newline-separated entries
// "id=base64key" (standard or URL-safe base64, padded or not, of KeySize
// bytes); the first entry is the sealing key. It returns nil, nil for a
// list without entries. Error messages never contain key material.
func ParseKeys(list string) (*Keyring, error) {
	var keys []Key
	for i, entry := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, secret, ok := strings.Cut(entry, "=")
		id, secret = strings.TrimSpace(id), strings.TrimSpace(secret)
		// An entry that is a bare key (base64, "=" padded) splits at its
		// padding: its "id" is key material, which no message quotes.
		if !ok || !validID(id) || secret == "" {
			return nil, fmt.Errorf("compaction: key entry %d is not id=base64key (the id: 1 to %d characters of A-Z, a-z, 0-9, '_' and '-')", i+1, maxKeyID)
		}
		b, err := decodeKey(secret)
		if err != nil {
			return nil, fmt.Errorf("compaction: the key of entry %d (id %q) is not base64", i+1, id)
		}
		keys = append(keys, Key{ID: id, Secret: b})
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return NewKeyring(keys...)
}

// decodeKey decodes standard or URL-safe base64, padded or not.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// NewDevKeyring returns a keyring with one random key (id "dev"), for local
// runs without configured keys: its blobs do not open in another process.
func NewDevKeyring() (*Keyring, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("compaction: generate a key: %w", err)
	}
	return NewKeyring(Key{ID: "dev", Secret: secret})
}

// SealingKeyID is the id of the key Seal uses.
func (k *Keyring) SealingKeyID() string { return k.sealID }

// Seal encrypts summary for tenant with the sealing key and a random nonce.
func (k *Keyring) Seal(tenant, summary string) (string, error) {
	aead := k.aeads[k.sealID]
	buf := make([]byte, aead.NonceSize(), aead.NonceSize()+len(summary)+aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("compaction: nonce: %w", err)
	}
	buf = aead.Seal(buf, buf, []byte(summary), aad(k.sealID, tenant))
	return k.sealID + "." + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open decrypts a blob Seal produced for tenant. Every failure wraps
// ErrInvalid.
func (k *Keyring) Open(tenant, blob string) (string, error) {
	id, payload, ok := strings.Cut(blob, ".")
	if !ok {
		return "", fmt.Errorf("%w: no key id", ErrInvalid)
	}
	aead, ok := k.aeads[id]
	if !ok {
		return "", fmt.Errorf("%w: sealed with key %q, which this gateway does not hold", ErrInvalid, textcut.Ellipsis(id, maxKeyID))
	}
	// Decoders skip line breaks: refused, so that a blob has one spelling.
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || strings.ContainsAny(payload, "\r\n") {
		return "", fmt.Errorf("%w: not base64url", ErrInvalid)
	}
	if len(b) < aead.NonceSize()+aead.Overhead() {
		return "", fmt.Errorf("%w: truncated", ErrInvalid)
	}
	nonce, ct := b[:aead.NonceSize()], b[aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, aad(id, tenant))
	if err != nil {
		return "", fmt.Errorf("%w: authentication failed (altered, or sealed for another tenant)", ErrInvalid)
	}
	return string(pt), nil
}

func aad(keyID, tenant string) []byte {
	return []byte(aadPrefix + keyID + "\x00" + tenant)
}

func validID(id string) bool {
	if id == "" || len(id) > maxKeyID {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
