package transparency

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashUUID is the name the public report gives a GPU: the first 16 hex
// digits (lower case) of the SHA-256 of its UUID, exactly as given (no
// trimming or case folding). It is stable and does not publish the UUID.
func HashUUID(uuid string) string {
	sum := sha256.Sum256([]byte(uuid))
	return hex.EncodeToString(sum[:8])
}
