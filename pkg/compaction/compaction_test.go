package compaction

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func key(id string, fill byte) Key { return Key{ID: id, Secret: bytes.Repeat([]byte{fill}, KeySize)} }

func keyring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSeal(t *testing.T, k *Keyring, tenant, summary string) string {
	t.Helper()
	blob, err := k.Seal(tenant, summary)
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

func wantInvalid(t *testing.T, k *Keyring, tenant, blob, why string) {
	t.Helper()
	got, err := k.Open(tenant, blob)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%s: Open = %q, %v; want ErrInvalid", why, got, err)
	}
}

func TestRoundTrip(t *testing.T) {
	k := keyring(t, key("k1", 1))
	for _, summary := range []string{"", "The user wants a landing page for a dog café. ☕", strings.Repeat("x", 1<<16)} {
		blob := mustSeal(t, k, "acme", summary)
		if !strings.HasPrefix(blob, "k1.") {
			t.Errorf("blob %.20q does not start with its key id", blob)
		}
		if strings.Contains(blob, "landing page") {
			t.Errorf("blob carries the plaintext: %q", blob)
		}
		got, err := k.Open("acme", blob)
		if err != nil || got != summary {
			t.Fatalf("Open = %.40q, %v; want the summary", got, err)
		}
	}
	// A random nonce per seal: the same summary never gives the same blob.
	if a, b := mustSeal(t, k, "acme", "same"), mustSeal(t, k, "acme", "same"); a == b {
		t.Errorf("two seals of the same summary are equal: %q", a)
	}
}

func TestRotationKeepsOldBlobsReadable(t *testing.T) {
	old := keyring(t, key("2025", 1))
	blob := mustSeal(t, old, "acme", "old summary")
	rotated := keyring(t, key("2026", 2), key("2025", 1))
	if got, err := rotated.Open("acme", blob); err != nil || got != "old summary" {
		t.Fatalf("rotated keyring opens the old blob as %q, %v", got, err)
	}
	fresh := mustSeal(t, rotated, "acme", "new summary")
	if !strings.HasPrefix(fresh, "2026.") || rotated.SealingKeyID() != "2026" {
		t.Errorf("the rotated keyring seals with %q (blob %.10q), want the first key 2026", rotated.SealingKeyID(), fresh)
	}
	// Once the old key is dropped, its blobs no longer open.
	wantInvalid(t, keyring(t, key("2026", 2)), "acme", blob, "retired key")
	// The old keyring cannot read the new key's blobs.
	wantInvalid(t, old, "acme", fresh, "unknown key")
}

func TestTamperIsRejected(t *testing.T) {
	k := keyring(t, key("k1", 1))
	blob := mustSeal(t, k, "acme", "summary")
	id, payload, _ := strings.Cut(blob, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x01
		wantInvalid(t, k, "acme", id+"."+base64.RawURLEncoding.EncodeToString(bad), "flipped byte")
	}
	// The key id is authenticated too: the same payload under another id
	// of an equal key does not open.
	twin := keyring(t, key("k1", 1), key("k2", 1))
	wantInvalid(t, twin, "acme", "k2."+payload, "swapped key id")
}

func TestWrongTenantIsRejected(t *testing.T) {
	k := keyring(t, key("k1", 1))
	blob := mustSeal(t, k, "acme", "summary")
	wantInvalid(t, k, "globex", blob, "other tenant")
	wantInvalid(t, k, "acme\x00", blob, "tenant with a suffix")
	wantInvalid(t, k, "", blob, "empty tenant")
}

func TestTruncatedAndGarbageAreRejected(t *testing.T) {
	k := keyring(t, key("k1", 1))
	blob := mustSeal(t, k, "acme", "summary")
	for _, n := range []int{0, 1, len("k1."), len("k1.") + 10, len(blob) - 1} {
		wantInvalid(t, k, "acme", blob[:n], "truncated")
	}
	for _, garbage := range []string{"", ".", "k1.", "k1.!!!not base64!!!", "k1.YWJj", "k1." + strings.Repeat("A", 100), "no-dot-at-all", "k1.AAAA=="} {
		wantInvalid(t, k, "acme", garbage, "garbage")
	}
}

func TestParseKeys(t *testing.T) {
	a := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, KeySize)) // has + and /
	b := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, KeySize))
	k, err := ParseKeys(" new=" + a + " ,\nold=" + b + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if k.SealingKeyID() != "new" {
		t.Errorf("sealing key %q, want the first entry", k.SealingKeyID())
	}
	blob := mustSeal(t, keyring(t, key("old", 0xfb)), "t", "s")
	if got, err := k.Open("t", blob); err != nil || got != "s" {
		t.Errorf("the second key does not open its blob: %q, %v", got, err)
	}
	if k, err := ParseKeys(" , \n"); k != nil || err != nil {
		t.Errorf("empty list = %v, %v; want nil, nil", k, err)
	}
	secret := base64.StdEncoding.EncodeToString([]byte("short-secret-value"))
	for _, bad := range []string{"nokey", "a=" + secret, "a=%%%", "a b=" + a, "=" + a, "a=" + a + ",a=" + a, strings.Repeat("x", 33) + "=" + a} {
		_, err := ParseKeys(bad)
		if err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), a) {
			t.Errorf("ParseKeys error shows key material: %v", err)
		}
	}
}

func TestDevKeyringIsPerProcess(t *testing.T) {
	a, err := NewDevKeyring()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewDevKeyring()
	if err != nil {
		t.Fatal(err)
	}
	blob := mustSeal(t, a, "t", "s")
	if got, err := a.Open("t", blob); err != nil || got != "s" {
		t.Fatalf("dev keyring round trip: %q, %v", got, err)
	}
	wantInvalid(t, b, "t", blob, "another dev key")
}

func TestNewKeyringRejectsBadKeys(t *testing.T) {
	for _, keys := range [][]Key{nil, {{ID: "a", Secret: make([]byte, 16)}}, {{ID: "a.b", Secret: make([]byte, KeySize)}}, {{ID: "", Secret: make([]byte, KeySize)}}} {
		if _, err := NewKeyring(keys...); err == nil {
			t.Errorf("NewKeyring(%v) accepted", keys)
		}
	}
}

// An entry that is a bare key (no "id=", as `openssl rand -base64 32`
// prints it, "=" padded) is refused without quoting it: split at its
// padding, its "id" was the key, which the error quoted.
func TestParseKeysQuotesNoKey(t *testing.T) {
	const key = "q83vEjRWeJq8/+/u3c7/ABEiM0RVZneImaq7zN3u/wA="
	_, err := ParseKeys(key)
	if err == nil {
		t.Fatal("a bare key accepted")
	}
	if strings.Contains(err.Error(), strings.TrimRight(key, "=")[:16]) {
		t.Fatalf("the error quotes the key: %v", err)
	}
}

// A blob is one string: the same payload with line breaks inserted (which
// base64 decoders skip) does not open, so one sealed summary cannot be
// sent as many different strings.
func TestLineBreaksAreRejected(t *testing.T) {
	k := keyring(t, key("k1", 1))
	blob := mustSeal(t, k, "acme", "summary")
	for _, br := range []string{"\n", "\r", "\r\n"} {
		wantInvalid(t, k, "acme", blob[:len(blob)-4]+br+blob[len(blob)-4:], "line break")
		wantInvalid(t, k, "acme", blob+br, "trailing line break")
	}
}

// FuzzOpen: any blob a client sends back either opens to what was sealed
// for its tenant (only "summary" for acme is ever sealed with these fixed
// keys, in every fuzzing process), or fails with ErrInvalid; never a
// panic.
func FuzzOpen(f *testing.F) {
	k, err := NewKeyring(key("k1", 1), key("k2", 2))
	if err != nil {
		f.Fatal(err)
	}
	sealed, err := k.Seal("acme", "summary")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{sealed, sealed + "\n", "k2." + sealed[3:], "", ".", "k1.", "k1.AAAA", "k3.AAAA", "k1.!!"} {
		f.Add("acme", s)
	}
	f.Add("globex", sealed)
	f.Fuzz(func(t *testing.T, tenant, blob string) {
		got, err := k.Open(tenant, blob)
		switch {
		case err != nil:
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) = %v, not ErrInvalid", blob, err)
			}
		case tenant != "acme" || got != "summary":
			t.Fatalf("Open(%q, %q) = %q: opened what was not sealed so", tenant, blob, got)
		}
	})
}
