package federation

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// NewToken returns a fresh random 256-bit bearer token in hex.
func NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("federation: crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// HashToken returns the hex SHA-256 of a token: what the store keeps.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// tokenMatches compares a presented token with a stored hash in constant time.
func tokenMatches(token, storedHash string) bool {
	h := sha256.Sum256([]byte(token))
	want, err := hex.DecodeString(storedHash)
	if err != nil || len(want) != len(h) {
		return false
	}
	return subtle.ConstantTimeCompare(h[:], want) == 1
}

// MinAdminTokenLength is the shortest admin token a server listening beyond
// loopback accepts: 32 characters, 128 bits when hex encoded.
const MinAdminTokenLength = 32
