// Package testimage builds the container images that ProofGate's Docker tests
// run, without a registry: it compiles the static helper in ./helper
// (CGO_ENABLED=0), lays it out in a FROM-scratch root filesystem tar and
// imports that tar through the Engine API under a content-addressed tag.
//
// Any package's tests (and the CLI's testscripts) call Ensure to get the
// helper image reference; Import builds other small images the same way.
package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// HelperRepo is the repository name of the helper image; its tag is the
// first 16 hex digits of the SHA-256 of the image's root filesystem tar.
const HelperRepo = "proofgate-test/helper"

// File is one entry of an image's root filesystem.
type File struct {
	Path string // absolute path in the image
	Mode os.FileMode
	UID  int
	GID  int
	Body []byte // nil for directories (Mode.IsDir())
	// Source, when set, is a host file whose bytes are the body (read when
	// the tar is written; Body is then ignored).
	Source string
	// Link, when set, makes the entry a symbolic link to Link (Body and
	// Source are then ignored).
	Link string
}

var (
	helperOnce sync.Once
	helperBin  []byte
	helperErr  error
)

// HelperBinary compiles the static helper once per process and returns its
// bytes.
func HelperBinary(ctx context.Context) ([]byte, error) {
	helperOnce.Do(func() {
		helperBin, helperErr = buildHelper(ctx)
	})
	return helperBin, helperErr
}

// BuildStatic compiles the main package in dir (an absolute directory inside
// this module) to a static linux binary and returns its bytes.
func BuildStatic(ctx context.Context, dir string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "proofgate-testimage-")
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH, "GOFLAGS=-mod=mod")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testimage: go build %s: %w: %s", dir, err, msg)
	}
	return os.ReadFile(out)
}

func buildHelper(ctx context.Context) ([]byte, error) {
	_, self, _, ok := goruntime.Caller(0)
	if !ok {
		return nil, errors.New("testimage: cannot locate helper source")
	}
	return BuildStatic(ctx, filepath.Join(filepath.Dir(self), "helper"))
}

// HelperFiles is the helper image's root filesystem: /bin/helper, a
// setuid-root copy at /bin/suid-helper (mode 04755, owner 0), /tmp (1777),
// /etc/passwd and /etc/group with root and nobody, and /etc/marker holding
// "proofgate-test-image\n".
func HelperFiles(helper []byte) []File {
	return []File{
		{Path: "/bin", Mode: os.ModeDir | 0o755},
		{Path: "/bin/helper", Mode: 0o755, Body: helper},
		{Path: "/bin/suid-helper", Mode: 0o755 | os.ModeSetuid, Body: helper},
		{Path: "/etc", Mode: os.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Body: []byte("root:x:0:0:root:/root:/bin/helper\nnobody:x:65534:65534:nobody:/nonexistent:/bin/helper\n")},
		{Path: "/etc/group", Mode: 0o644, Body: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/etc/marker", Mode: 0o644, Body: []byte("proofgate-test-image\n")},
		{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
	}
}

// RootTmpFiles is the helper image with /tmp and /home/sandbox owned by
// root with mode 0755, as some base images ship them: a tmpfs mounted there
// with Docker's default copy-up takes that mode, not the one it was asked
// for.
func RootTmpFiles(helper []byte) []File {
	files := HelperFiles(helper)
	for i := range files {
		if files[i].Path == "/tmp" {
			files[i].Mode = os.ModeDir | 0o755
		}
	}
	return append(files, File{Path: "/home/sandbox", Mode: os.ModeDir | 0o755})
}

// DevRef is a stable tag that Ensure also points at the helper image, for
// examples/docker/contract.yaml. Tests use the content-addressed reference.
const DevRef = HelperRepo + ":dev"

// Ensure makes sure the helper image is present on the daemon named by the
// environment (DOCKER_HOST) and returns its reference. It is idempotent: an
// image already present under the content-addressed tag is not re-imported.
func Ensure(ctx context.Context) (string, error) {
	bin, err := HelperBinary(ctx)
	if err != nil {
		return "", err
	}
	ref, err := Import(ctx, HelperRepo, HelperFiles(bin))
	if err != nil {
		return "", err
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return "", fmt.Errorf("testimage: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: DevRef}); err != nil {
		return "", fmt.Errorf("testimage: tag %s: %w", DevRef, err)
	}
	return ref, nil
}

// Import builds a root filesystem tar from files and imports it as
// repo:<content hash> unless that tag already exists. It returns the
// reference.
func Import(ctx context.Context, repo string, files []File) (string, error) {
	return ImportWithChanges(ctx, repo, files)
}

// ImportWithChanges is Import with Dockerfile instructions applied to the
// image's configuration (for example "ENV FOO=bar"); they count in the tag.
// The tar is streamed twice (once to hash it, once into the daemon when the
// tag is absent), never held in memory, so files may name large host files
// through File.Source.
func ImportWithChanges(ctx context.Context, repo string, files []File, changes ...string) (string, error) {
	ref, err := contentRef(repo, files, changes)
	if err != nil {
		return "", err
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return "", fmt.Errorf("testimage: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !IsNotFound(err) {
		return "", fmt.Errorf("testimage: inspect %s: %w", ref, err)
	}
	if err := importTar(ctx, cli, ref, files, changes); err != nil {
		return "", err
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return "", fmt.Errorf("testimage: import %s: image absent afterwards: %w", ref, err)
	}
	return ref, nil
}

// contentRef is repo:<first 16 hex digits of SHA-256(layer)>, or with
// changes of SHA-256(layer || for each change: 0x00 || change).
func contentRef(repo string, files []File, changes []string) (string, error) {
	h := sha256.New()
	if err := WriteTar(h, files); err != nil {
		return "", err
	}
	for _, c := range changes {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	return repo + ":" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// importTar streams the layer into the daemon's image import under ref.
func importTar(ctx context.Context, cli *client.Client, ref string, files []File, changes []string) error {
	pr, pw := io.Pipe()
	defer pr.Close() // unblocks the writer when the import stops reading early
	go func() { pw.CloseWithError(WriteTar(pw, files)) }()
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, ref, client.ImageImportOptions{Message: "proofgate test image", Changes: changes})
	if err != nil {
		return fmt.Errorf("testimage: import %s: %w", ref, err)
	}
	msg, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return fmt.Errorf("testimage: import %s: %w", ref, err)
	}
	if bytes.Contains(msg, []byte(`"error"`)) {
		return fmt.Errorf("testimage: import %s: %s", ref, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Tar returns a deterministic tar of files (sorted by path, zero mtimes),
// with parent directories created as needed.
func Tar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteTar(&buf, files); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTar writes the tar that Tar returns to w, reading each body named by
// File.Source from the host as it goes.
func WriteTar(w io.Writer, files []File) error {
	byPath := map[string]File{}
	for _, f := range files {
		if !strings.HasPrefix(f.Path, "/") {
			return fmt.Errorf("testimage: path %q is not absolute", f.Path)
		}
		p := filepath.Clean(f.Path)
		byPath[p] = f
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = File{Path: d, Mode: os.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		if err := writeEntry(tw, p, byPath[p]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	return nil
}

// writeEntry writes one header and body; a Source file must keep the size
// it has when opened.
func writeEntry(tw *tar.Writer, p string, f File) error {
	mode := int64(f.Mode.Perm())
	if f.Mode&os.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if f.Mode&os.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if f.Mode&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: mode, Uid: f.UID, Gid: f.GID, Format: tar.FormatPAX}
	if f.Mode.IsDir() {
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		return tarHeader(tw, h)
	}
	if f.Link != "" {
		h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		return tarHeader(tw, h)
	}
	h.Typeflag = tar.TypeReg
	if f.Source == "" {
		h.Size = int64(len(f.Body))
		if err := tarHeader(tw, h); err != nil {
			return err
		}
		_, err := tw.Write(f.Body)
		return tarErr(err)
	}
	src, err := os.Open(f.Source)
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("testimage: %s is not a regular file (%v)", f.Source, err)
	}
	h.Size = fi.Size()
	if err := tarHeader(tw, h); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, src, h.Size); err != nil {
		return fmt.Errorf("testimage: %s changed while read: %w", f.Source, err)
	}
	return nil
}

func tarHeader(tw *tar.Writer, h *tar.Header) error { return tarErr(tw.WriteHeader(h)) }

func tarErr(err error) error {
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	return nil
}

// IsNotFound reports whether err is the daemon's "no such object" answer.
func IsNotFound(err error) bool {
	return cerrdefs.IsNotFound(err)
}
