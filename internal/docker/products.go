package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// collectProducts reads a check's products out of its copy-mode workspace
// (ADR 0039), through the exited container, whose workspace volume the
// copy holder still keeps mounted: Run calls it before the probe ends the
// holder's archive (and the daemon drops the volume's content), for a
// check that exited 0 unkilled, and keeps the result only when the check
// passes. Nothing in the container runs any more, so what is read is what
// the check left. For each product
// root, the elements of its path are stat'ed from the top (a symbolic link
// on the way is refused; a root that does not exist is passed over: the
// kernel says which glob matched nothing), then the root is read as an
// archive, in which nothing is followed.
func (c *checkRun) collectProducts(ctx context.Context) error {
	if !c.p.copyWS {
		return errors.New("a docker check produces files only in a copy-mode workspace")
	}
	p := runtime.Products{Globs: c.spec.Produces, Collect: c.spec.Collect}
	for _, root := range runtime.ProductRoots(p.Globs) {
		ok, err := c.rootPresent(ctx, root)
		if err != nil || !ok {
			return err
		}
		if err := c.readRoot(ctx, root, p); err != nil {
			return err
		}
	}
	return nil
}

// rootPresent stats each element of rel under the workspace: false when
// one does not exist, an error when one is a symbolic link.
func (c *checkRun) rootPresent(ctx context.Context, rel string) (bool, error) {
	if rel == "" {
		return true, nil
	}
	segs := strings.Split(rel, "/")
	for i := range segs {
		p := strings.Join(segs[:i+1], "/")
		st, err := c.r.cli.ContainerStatPath(ctx, c.id, client.ContainerStatPathOptions{Path: WorkspaceTarget + "/" + p})
		if isNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("stat %s: %w", p, err)
		}
		if st.Stat.Mode&fs.ModeSymlink != 0 || st.Stat.LinkTarget != "" {
			return false, fmt.Errorf("%s is a symbolic link: products are read without following links", p)
		}
	}
	return true, nil
}

// readRoot reads the workspace path rel as the daemon archives it (its
// entries named under rel's last element) and offers every entry.
func (c *checkRun) readRoot(ctx context.Context, rel string, p runtime.Products) error {
	src := WorkspaceTarget
	if rel != "" {
		src += "/" + rel
	}
	res, err := c.r.cli.CopyFromContainer(ctx, c.id, client.CopyFromContainerOptions{SourcePath: src})
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	defer res.Content.Close()
	top := path.Base(src)
	tr := tar.NewReader(res.Content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", src, err)
		}
		e, err := productEntry(h, top, rel)
		if err != nil {
			return err
		}
		if e.Path == "" {
			continue // the workspace itself
		}
		if err := p.Offer(e, tr); err != nil {
			return err
		}
	}
}

// productEntry names an archive entry of the root rel (archived as top)
// by its workspace path. A hard link is not a regular file: its content
// is another entry's.
func productEntry(h *tar.Header, top, rel string) (runtime.Entry, error) {
	name := path.Clean(h.Name)
	first, rest, _ := strings.Cut(name, "/")
	if first != top || rest == ".." || strings.HasPrefix(rest, "../") || path.IsAbs(name) {
		return runtime.Entry{}, fmt.Errorf("the daemon's archive of %s holds entry %q", top, h.Name)
	}
	e := runtime.Entry{Path: path.Join(rel, rest), Mode: h.FileInfo().Mode(), Size: h.Size}
	if h.Typeflag == tar.TypeLink {
		e.Mode = fs.ModeIrregular
	}
	return e, nil
}
