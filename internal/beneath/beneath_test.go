//go:build unix

package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tree makes a work tree beside a secret, with every kind of link out of it.
func tree(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	root := filepath.Join(top, "tree")
	secret := filepath.Join(top, "secret")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(secret, []byte("x"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o600))
	must(t, os.Symlink(secret, filepath.Join(root, "abs")))
	must(t, os.Symlink("../../secret", filepath.Join(root, "sub", "rel")))
	must(t, os.Symlink("c2", filepath.Join(root, "c1")))
	must(t, os.Symlink("sub/rel", filepath.Join(root, "c2")))
	must(t, os.Symlink(top, filepath.Join(root, "up")))
	must(t, os.Symlink("/proc/self/root"+secret, filepath.Join(root, "magic")))
	must(t, os.Symlink("../file", filepath.Join(root, "sub", "in")))
	must(t, os.Symlink("loop", filepath.Join(root, "loop")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	for name, st := range map[string]func(string, string) (fs.FileInfo, error){"native": stat, "os.Root": statRoot} {
		t.Run(name, func(t *testing.T) {
			old := statFn
			statFn = st
			defer func() { statFn = old }()
			root := tree(t)
			for _, rel := range []string{"abs", "sub/rel", "c1", "up/secret", "up/tree/../secret", "magic", "up/new", "../secret", "/etc/passwd", "sub/../../secret", "fifo", "loop", "file/x"} {
				if e, err := Resolve(root, rel); err == nil {
					t.Errorf("%s: accepted %+v", rel, e)
				}
			}
			for _, rel := range []string{"abs", "sub/rel", "c1", "up/secret", "up/new"} {
				if _, err := Resolve(root, rel); !errors.Is(err, ErrOutside) {
					t.Errorf("%s: %v, want ErrOutside", rel, err)
				}
			}
			for rel, exists := range map[string]bool{"file": true, "sub": true, "sub/in": true, ".": true, "new": false, "sub/new/deeper": false} {
				e, err := Resolve(root, rel)
				if err != nil || (e.Info != nil) != exists {
					t.Errorf("%s: %+v %v", rel, e, err)
				}
			}
			a, _ := Resolve(root, "file")
			b, _ := Resolve(root, "sub/in")
			if a.Info == nil || b.Info == nil || !os.SameFile(a.Info, b.Info) {
				t.Error("a link inside the tree does not resolve to its target")
			}
		})
	}
}
