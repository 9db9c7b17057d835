package control

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// unitVersion is part of every unit key; bump it when a unit's computation changes.
const unitVersion = 2

// key hashes the JSON of v (a struct of everything a unit depends on).
func key(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("control: unit key: %v", err)) // keys are plain structs
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// unit is one unit of work: its file and what it depends on.
type unit struct {
	kind string // expert, demos, irl, fusion, eval
	name string // human-readable part of the file name
	key  string
	ext  string
}

// path is the unit's file under the units folder root (a run folder's
// units/, or a sweep's shared one).
func (u unit) path(root string) string {
	return filepath.Join(root, u.kind, u.name+"-"+u.key+u.ext)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// seedOf derives a seed for purpose from the study seed s and indices.
func seedOf(s uint64, purpose string, idx ...int) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "%d/%s", s, purpose)
	for _, i := range idx {
		fmt.Fprintf(h, "/%d", i)
	}
	var b [8]byte
	copy(b[:], h.Sum(nil))
	v := uint64(0)
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v >> 1 // non-negative as int64 too
}
