package toolimage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// SharedLibraries returns the absolute paths of the shared libraries `ldd
// bin` names, the dynamic loader included (linux-vdso, which has no file,
// left out), sorted. A library ldd cannot find is an error: the image would
// not run.
func SharedLibraries(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("toolimage: ldd %s: %w", bin, err)
	}
	return ParseLdd(out)
}

// ParseLdd reads ldd's output: lines "name => /path (0x...)", "/path
// (0x...)" and "name (0x...)" (the vDSO).
func ParseLdd(out []byte) ([]string, error) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line == "statically linked" {
			continue
		}
		target := line
		if _, after, ok := strings.Cut(line, "=>"); ok {
			target = strings.TrimSpace(after)
			if strings.HasPrefix(target, "not found") {
				return nil, fmt.Errorf("toolimage: ldd: %s", line)
			}
		}
		p, _, _ := strings.Cut(target, " ")
		if !strings.HasPrefix(p, "/") {
			continue // linux-vdso.so.1
		}
		if path.Clean(p) != p {
			return nil, fmt.Errorf("toolimage: ldd: library path %q is not clean", p)
		}
		seen[p] = true
	}
	libs := make([]string, 0, len(seen))
	for p := range seen {
		libs = append(libs, p)
	}
	sort.Strings(libs)
	return libs, nil
}
