package testimage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
)

// GoRepo is the repository name of the Go toolchain image; its tag is the
// content hash of its root filesystem and configuration, as for the helper.
const GoRepo = "proofgate-test/go"

// GoRoot is where the Go toolchain image holds the host's GOROOT. The go
// command finds its GOROOT from its own path, so nothing needs to set it.
const GoRoot = "/usr/local/go"

// GoImageEnv is the image configuration's environment: PATH reaches go and
// gofmt, GOTOOLCHAIN=local forbids toolchain downloads, CGO_ENABLED=0
// because the image has no C compiler. A check's declared environment
// (HOME, GOCACHE, GOMODCACHE, GOFLAGS) is set by its contract and
// overrides these.
var GoImageEnv = []string{
	"PATH=" + GoRoot + "/bin:/bin",
	"GOTOOLCHAIN=local",
	"CGO_ENABLED=0",
}

var (
	goOnce sync.Once
	goRef  string
	goErr  error
)

// EnsureGo makes sure the Go toolchain image is present on the daemon
// named by the environment and returns its reference. The image is FROM
// scratch: the host's GOROOT (`go env GOROOT` of the go on PATH, trimmed by
// GoRootFiles) at GoRoot, the static helper at /bin/helper, /tmp (1777),
// /etc/passwd and /etc/group with root and nobody, and the host's CA bundle
// at /etc/ssl/certs/ca-certificates.crt when it has one (for a fetch check
// with network host). There is no git and no C compiler. The tar is hashed
// once per process (about 190 MB read) and imported only when its tag is
// absent.
func EnsureGo(ctx context.Context) (string, error) {
	goOnce.Do(func() {
		goRef, goErr = ensureGo(ctx)
	})
	return goRef, goErr
}

func ensureGo(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("testimage: go env GOROOT: %w", err)
	}
	files, err := GoRootFiles(strings.TrimSpace(string(out)), "linux_"+goruntime.GOARCH)
	if err != nil {
		return "", err
	}
	bin, err := HelperBinary(ctx)
	if err != nil {
		return "", err
	}
	for _, f := range HelperFiles(bin) {
		if f.Path != "/etc/marker" && f.Path != "/bin/suid-helper" {
			files = append(files, f)
		}
	}
	const ca = "/etc/ssl/certs/ca-certificates.crt"
	if fi, err := os.Stat(ca); err == nil && fi.Mode().IsRegular() {
		files = append(files, File{Path: ca, Mode: 0o644, Source: ca})
	}
	changes := make([]string, len(GoImageEnv))
	for i, kv := range GoImageEnv {
		changes[i] = "ENV " + kv
	}
	return ImportWithChanges(ctx, GoRepo, files, changes...)
}

// GoRootFiles lists the parts of the GOROOT at root that `go build`, `go
// vet` and `go test` need, placed under GoRoot, with bodies read from the
// host when the tar is written: VERSION, go.env, bin/, lib/, pkg/include,
// pkg/tool/<platform> and src/ without testdata directories and _test.go
// files. Left out: api/, doc/, misc/, test/, the tools of other platforms
// and the other top-level files. Only directories and regular files are
// taken; anything else in the kept parts is an error.
func GoRootFiles(root, platform string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if !keepGoRoot(rel, d.IsDir(), platform) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: path.Join(GoRoot, rel), Mode: fi.Mode().Perm()}
		switch {
		case fi.IsDir():
			f.Mode |= os.ModeDir
		case fi.Mode().IsRegular():
			f.Source = p
		default:
			return fmt.Errorf("%s is neither a directory nor a regular file", p)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("testimage: goroot: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("testimage: goroot %s: nothing to import", root)
	}
	return files, nil
}

// keepGoRoot decides for one GOROOT-relative slash path.
func keepGoRoot(rel string, dir bool, platform string) bool {
	top, rest, _ := strings.Cut(rel, "/")
	switch top {
	case "VERSION", "go.env", "LICENSE":
		return !dir && rest == ""
	case "bin", "lib":
		return true
	case "pkg":
		return rest == "" || rest == "include" || strings.HasPrefix(rest, "include/") ||
			rest == "tool" || rest == "tool/"+platform || strings.HasPrefix(rest, "tool/"+platform+"/")
	case "src":
		base := path.Base(rel)
		if dir {
			return base != "testdata"
		}
		return !strings.HasSuffix(base, "_test.go")
	}
	return false
}
