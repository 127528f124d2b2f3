package toolimage

import (
	"path"
	"reflect"
	"strings"
	"testing"
)

func TestParseLdd(t *testing.T) {
	out := `	linux-vdso.so.1 (0x00007ffd)
	libdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f92)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f92)
	libdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f92)
	/lib64/ld-linux-x86-64.so.2 (0x00007f92)
`
	got, err := ParseLdd([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libdl.so.2", "/lib64/ld-linux-x86-64.so.2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseLdd = %q, want %q", got, want)
	}
}

// A library ldd cannot find, or a path that climbs out, is refused: the
// image would not run, or would take a file from elsewhere.
func TestParseLddRefuses(t *testing.T) {
	for _, out := range []string{
		"libfoo.so.1 => not found\n",
		"libfoo.so.1 => /lib/../etc/shadow (0x1)\n",
		"/lib//libc.so.6 (0x1)\n",
	} {
		if got, err := ParseLdd([]byte(out)); err == nil {
			t.Errorf("ParseLdd(%q) = %q, want an error", out, got)
		}
	}
}

func FuzzParseLdd(f *testing.F) {
	f.Add([]byte("libc.so.6 => /lib/libc.so.6 (0x1)\n/lib64/ld.so (0x2)\nlinux-vdso.so.1 (0x3)\n"))
	f.Add([]byte("statically linked\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		libs, err := ParseLdd(out)
		if err != nil {
			return
		}
		for _, l := range libs {
			if !strings.HasPrefix(l, "/") || path.Clean(l) != l {
				t.Fatalf("ParseLdd kept %q: not a clean absolute path", l)
			}
		}
	})
}
