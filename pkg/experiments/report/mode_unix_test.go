//go:build unix

package report

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFileModeFollowsUmask checks that run-folder files are created 0644
// and folders 0755 under the user's umask, as os.Create and os.MkdirAll do:
// readable by collaborators under umask 022, private under umask 077.
func TestWriteFileModeFollowsUmask(t *testing.T) {
	for _, c := range []struct {
		umask         int
		file, dirMode fs.FileMode
	}{{0o022, 0o644, 0o755}, {0o077, 0o600, 0o700}, {0o002, 0o644, 0o755}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		p := filepath.Join(dir, "run", "units", "x.csv")
		err := WriteFile(p, []byte("a,b\n"))
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			path string
			want fs.FileMode
		}{{p, c.file}, {filepath.Dir(p), c.dirMode}, {filepath.Dir(filepath.Dir(p)), c.dirMode}} {
			st, err := os.Stat(q.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != q.want {
				t.Errorf("umask %03o: %s has mode %03o, want %03o", c.umask, q.path, got, q.want)
			}
		}
	}
}
