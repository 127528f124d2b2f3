//go:build !linux

package beneath

import "io/fs"

// stat resolves rel beneath root through os.Root.
func stat(root, rel string) (fs.FileInfo, error) { return statRoot(root, rel) }
