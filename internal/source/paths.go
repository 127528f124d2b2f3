package source

import (
	"errors"
	"path/filepath"
)

// AbsReal returns p as an absolute path with symlinks resolved (p itself,
// made absolute, when it does not resolve).
func AbsReal(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

// RelLocal returns p relative to root, slash-separated, when it lies
// inside it, and an error when it does not.
func RelLocal(root, p string) (string, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", errors.New("outside")
	}
	return filepath.ToSlash(rel), nil
}
