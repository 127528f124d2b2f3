//go:build !unix

package lock

import "io/fs"

// nlink is unknown off Unix: a kept lock is then never retaken (Retake
// refuses) and kept files are never swept.
func nlink(fs.FileInfo) (uint64, bool) { return 0, false }
