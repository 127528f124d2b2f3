package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// CollectDir offers the products of a check that ran on the host work tree
// at workspace (the process provider): it walks each of ProductRoots(globs)
// without following a symbolic link. A root with a symbolic link on its
// way is refused; a root that does not exist is passed over (the kernel
// says which glob matched nothing).
func CollectDir(workspace string, p Products) error {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, r := range ProductRoots(p.Globs) {
		ok, err := noLinkOnTheWay(root, r)
		if err != nil || !ok {
			return err
		}
		if err := walkRoot(root, r, p); err != nil {
			return err
		}
	}
	return nil
}

// noLinkOnTheWay lstats each element of rel from the top: false when one
// does not exist, an error when one is a symbolic link.
func noLinkOnTheWay(root *os.Root, rel string) (bool, error) {
	if rel == "" {
		return true, nil
	}
	segs := strings.Split(rel, "/")
	for i := range segs {
		p := strings.Join(segs[:i+1], "/")
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return false, fmt.Errorf("%s is a symbolic link: products are read without following links", p)
		}
	}
	return true, nil
}

func walkRoot(root *os.Root, rel string, p Products) error {
	start := rel
	if start == "" {
		start = "."
	}
	return fs.WalkDir(root.FS(), start, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name = path.Clean(name)
		if d.IsDir() || !Produced(p.Globs, name) {
			return nil
		}
		e := Entry{Path: name, Mode: d.Type()}
		if !d.Type().IsRegular() {
			return p.Offer(e, nil)
		}
		f, err := root.OpenFile(name, os.O_RDONLY|NoFollow, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		e.Mode, e.Size = fi.Mode(), fi.Size()
		return p.Offer(e, f)
	})
}
