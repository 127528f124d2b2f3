package main

import (
	"errors"
	"path/filepath"
)

// absReal returns p as an absolute path with symlinks resolved.
func absReal(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

// relLocal returns p relative to root when it lies inside it.
func relLocal(root, p string) (string, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", errors.New("outside")
	}
	return filepath.ToSlash(rel), nil
}
