//go:build !unix

package run

import "testing"

func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skip("no named pipes in the file system here")
}
