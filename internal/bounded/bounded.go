// Package bounded reads input with a size limit: the first bound of every
// parser ProofGate runs on a file or a stream (trust stores, keys, locks,
// run.json, contract.json, event logs, replies).
package bounded

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
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

// NotRegularError is a path that names something other than a regular
// file: a named pipe (which would block the reader until a writer comes), a
// device (/dev/zero never ends, a tape rewinds), a socket or a directory.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file; give the path of a file", e.Path, kindOf(e.Mode))
}

// Kind says what the path names instead: "a named pipe (FIFO)", "a
// character device", ...
func (e *NotRegularError) Kind() string { return kindOf(e.Mode) }

func kindOf(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDir != 0:
		return "a directory"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

// Open opens the file at path for reading and refuses (*NotRegularError)
// anything but a regular file. The open itself never waits: O_NONBLOCK
// makes opening a FIFO return at once (a blocking open waits for a
// writer, and ignores SIGTERM while it does), and the type is checked on
// the opened file, so a name swapped between a check and the open is
// still refused. Every file ProofGate reads from a path a user or a PR
// gives is opened here. An error opening it is returned as os.OpenFile
// returns it (a *fs.PathError).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, nil
}

// ReadFile is ReadAll of the regular file at path (Open): a FIFO, a device
// or a directory is a *NotRegularError, a file longer than limit a
// *TooLargeError, both without reading past limit+1 bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
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

// SHA256File returns the SHA-256 (lowercase hex) of the regular file at
// path, opened as Open opens it.
func SHA256File(path string) (string, error) {
	f, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
