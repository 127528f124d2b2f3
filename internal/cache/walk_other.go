//go:build !linux

package cache

import "io/fs"

// walkTree checks and digests the tree under dir (walkTreePortable); with
// openDirs, directories the harness owns become mode 0777 first.
func walkTree(dir string, openDirs bool) (Tree, error) {
	var visit func(string, fs.FileInfo)
	if openDirs {
		visit = openForSandbox
	}
	return walkTreePortable(dir, visit)
}
