package federation

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrNotStore is wrapped by the error about a --store path that holds some
// other file (JSON, a database of another kind, text): no fedirl store ever
// looked like it, so it is not called damaged.
var ErrNotStore = errors.New("not a fedirl store (bbolt) file")

// bboltMagic is the magic number of a bbolt meta page (at offset 16 of
// pages 0 and 1).
const bboltMagic = 0xED0CDAED

// checkIsBolt refuses a non-empty file that has a bbolt meta page at
// neither of the two places (page 0, page 1 at the usual page sizes), naming
// what the file looks like instead.
func checkIsBolt(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // the open below reports it
	}
	defer f.Close()
	head := make([]byte, 2*65536+20)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if n == 0 {
		return nil // empty: reported as damaged by OpenStoreWith
	}
	for _, off := range []int{0, 4096, 8192, 16384, 65536} {
		if off+20 <= n && binary.LittleEndian.Uint32(head[off+16:]) == bboltMagic {
			return nil
		}
	}
	if ps := boltPagesWithoutMeta(f, head); ps > 0 {
		return fmt.Errorf("opening store %s: %w: both meta pages (the file's two headers, its first %d bytes) are unreadable, while its later pages are bbolt's (%d-byte pages): a fedirl store whose headers were overwritten. The file was not modified; restore it from a backup (check the backup first with \"fedirl server store check --store BACKUP\")", path, ErrStoreDamaged, 2*ps, ps)
	}
	return fmt.Errorf("opening store %s: %w: it looks like %s. --store names the file \"fedirl server --init\" or \"fedirl server task create\" made (default fedirl.db)", path, ErrNotStore, sniff(head))
}

// boltPagesWithoutMeta returns the page size at which the pages after the
// two meta pages of f look like bbolt's (page header: its own id, then
// branch, leaf or freelist flags), or 0. head holds f's first bytes.
func boltPagesWithoutMeta(f *os.File, head []byte) int {
	for _, ps := range []int{4096, 8192, 16384, 65536} {
		ok := 0
		for id := 2; id < 4; id++ {
			hdr := make([]byte, 10)
			if _, err := f.ReadAt(hdr, int64(id*ps)); err != nil {
				break
			}
			flags := binary.LittleEndian.Uint16(hdr[8:])
			if binary.LittleEndian.Uint64(hdr) == uint64(id) && (flags == 0x01 || flags == 0x02 || flags == 0x10) {
				ok++
			}
		}
		if ok == 2 {
			return ps
		}
	}
	return 0
}

// sniff names the kind of file head starts like.
func sniff(head []byte) string {
	s := strings.TrimLeft(string(head[:min(len(head), 64)]), " \t\r\n\ufeff")
	switch {
	case strings.HasPrefix(s, "SQLite format 3"):
		return "an SQLite database"
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		return "a JSON file"
	case strings.HasPrefix(s, "PK\x03\x04"):
		return "a zip archive (.npz?)"
	case strings.HasPrefix(s, "\x93NUMPY"):
		return "a NumPy .npy array"
	case strings.HasPrefix(s, "-----BEGIN"):
		return "a PEM certificate or key"
	}
	for _, r := range s {
		if r == 0xfffd || (r < 0x20 && r != '\n' && r != '\r' && r != '\t') {
			return "a binary file of another kind"
		}
	}
	return "a text file"
}
