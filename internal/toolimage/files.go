// Package toolimage builds container images that stand in for Docker Hub's
// official toolchain images (golang, node) from the host's own toolchains,
// for the tests' local registry mirror (internal/registrytest): no image is
// ever pulled from the internet.
//
// An image is two layers: a base (Debian's static busybox with a link per
// applet, /etc/passwd and /etc/group with root and nobody, the host's CA
// bundle, /tmp 1777, /root) and the toolchain (the host's GOROOT at
// /usr/local/go; or the host's node at /usr/local/bin/node with the shared
// libraries ldd names, and the host's npm at /usr/local/lib/node_modules/npm).
// The configuration copies the official images' PATH, working directory and
// version variables.
package toolimage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/internal/testimage"
)

// Busybox is where Debian's busybox-static package installs its binary.
const Busybox = "/bin/busybox"

// CABundle is the host's CA bundle, placed at the same path in the image.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// BaseFiles is the base layer: the static busybox at /bin/busybox with a
// symbolic link for each applet it lists (`busybox --list-full`: /bin/sh,
// /usr/bin/env, ...), root and nobody in /etc/passwd and /etc/group, an
// nsswitch.conf, the CA bundle when the host has one, /tmp (1777) and /root.
func BaseFiles(ctx context.Context, busybox string) ([]testimage.File, error) {
	out, err := exec.CommandContext(ctx, busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("toolimage: %s --list-full: %w (install Debian's busybox-static)", busybox, err)
	}
	files := []testimage.File{
		{Path: Busybox, Mode: 0o755, Source: busybox},
		{Path: "/etc/passwd", Mode: 0o644, Body: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Body: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Body: []byte("passwd: files\ngroup: files\nhosts: files dns\n")},
		{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
		{Path: "/root", Mode: os.ModeDir | 0o700},
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := "/" + strings.TrimPrefix(strings.TrimSpace(sc.Text()), "/")
		if p == "/" || p == Busybox || !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			continue
		}
		files = append(files, testimage.File{Path: p, Mode: 0o777, Link: Busybox})
	}
	if len(files) < 10 {
		return nil, fmt.Errorf("toolimage: %s lists no applets", busybox)
	}
	if fi, err := os.Stat(CABundle); err == nil && fi.Mode().IsRegular() {
		files = append(files, testimage.File{Path: CABundle, Mode: 0o644, Source: CABundle})
	}
	return files, nil
}

// GoFiles is the Go toolchain layer: the GOROOT at goroot (trimmed as
// testimage.GoRootFiles trims it) at /usr/local/go, and GOPATH /go with
// src and bin, all 1777 as in the official image.
func GoFiles(goroot, platform string) ([]testimage.File, error) {
	files, err := testimage.GoRootFiles(goroot, platform)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"/go", "/go/src", "/go/bin"} {
		files = append(files, testimage.File{Path: d, Mode: os.ModeDir | os.ModeSticky | 0o777})
	}
	return files, nil
}

// NodeFiles is the Node layer: the node binary at /usr/local/bin/node, each
// shared library `ldd node` names at the path it names (the loader too),
// the npm package directory npmDir at /usr/local/lib/node_modules/npm and
// the npm and npx links in /usr/local/bin, as the official image has them.
// Where the host has a CA bundle (the base layer copies it), npm's global
// configuration (/usr/local/etc/npmrc) names it as its cafile: npm then
// trusts what the host trusts (a TLS-inspecting proxy's CA, here) instead
// of node's built-in list only.
func NodeFiles(ctx context.Context, node, npmDir string) ([]testimage.File, error) {
	libs, err := SharedLibraries(ctx, node)
	if err != nil {
		return nil, err
	}
	files := []testimage.File{{Path: "/usr/local/bin/node", Mode: 0o755, Source: node}}
	for _, l := range withRuntimeLibraries(libs) {
		files = append(files, testimage.File{Path: l, Mode: 0o755, Source: l})
	}
	const npmAt = "/usr/local/lib/node_modules/npm"
	tree, err := TreeFiles(npmDir, npmAt)
	if err != nil {
		return nil, err
	}
	files = append(files, tree...)
	files = append(files,
		testimage.File{Path: "/usr/local/bin/npm", Link: "../lib/node_modules/npm/bin/npm-cli.js"},
		testimage.File{Path: "/usr/local/bin/npx", Link: "../lib/node_modules/npm/bin/npx-cli.js"},
	)
	if fi, err := os.Stat(CABundle); err == nil && fi.Mode().IsRegular() {
		files = append(files, testimage.File{Path: "/usr/local/etc/npmrc", Mode: 0o644, Body: []byte("cafile=" + CABundle + "\n")})
	}
	return files, nil
}

// runtimeLibraries are the C runtime's libraries that a Debian-based
// official image has whether or not node links them: native addons that
// npm installs (napi-rs binaries such as unrs-resolver's link librt,
// libgcc_s, libdl) load them at run time.
var runtimeLibraries = []string{
	"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
	"libresolv.so.2", "libutil.so.1", "libnss_files.so.2", "libnss_dns.so.2",
	"libgcc_s.so.1", "libstdc++.so.6",
}

// withRuntimeLibraries adds to libs (ldd's list for a binary) those of
// runtimeLibraries that the host has in the directory of its libc.
func withRuntimeLibraries(libs []string) []string {
	dir := ""
	have := map[string]bool{}
	for _, l := range libs {
		have[l] = true
		if filepath.Base(l) == "libc.so.6" {
			dir = filepath.Dir(l)
		}
	}
	if dir == "" {
		return libs
	}
	out := append([]string(nil), libs...)
	for _, name := range runtimeLibraries {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && !have[p] {
			out = append(out, p)
		}
	}
	return out
}

// TreeFiles lists the directory tree at dir placed under at: directories,
// regular files (with their modes) and symbolic links (kept as links).
func TreeFiles(dir, at string) ([]testimage.File, error) {
	var files []testimage.File
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f := testimage.File{Path: path.Join(at, filepath.ToSlash(rel)), Mode: fi.Mode().Perm()}
		switch {
		case fi.IsDir():
			f.Mode |= os.ModeDir
		case fi.Mode().IsRegular():
			f.Source = p
		case fi.Mode()&os.ModeSymlink != 0:
			if f.Link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a directory, a regular file nor a link", p)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("toolimage: %s: %w", dir, err)
	}
	return files, nil
}
