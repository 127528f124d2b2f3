// Package bounded reads input with a size limit: the first bound of every
// parser ProofGate runs on a file or a stream (trust stores, keys, locks,
// run.json, contract.json, event logs, replies).
package bounded

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TooLargeError is input longer than its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Limit) }

// ReadAll reads r to its end, or to limit+1 bytes: more than limit is a
// *TooLargeError, and nothing past limit+1 is read.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}

// ReadFile is ReadAll of the file at path; an error opening it is returned
// as os.Open returns it.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, limit)
}

// ReadFS is ReadFile of name in fsys.
func ReadFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, limit)
}
