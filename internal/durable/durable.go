// Package durable writes files the way every ProofGate file that matters is
// written: into a temporary file in the target's directory, fsynced, then
// renamed (or linked) into place, so a reader sees the old content or the
// new one and never a part, and nothing is left behind on failure.
package durable

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// syncs counts every fsync made through Sync (and so SyncDir and every
// writer here): the kernel's durable writes all go through it, so tests
// can assert what an operation costs (ADR 0019).
var (
	syncs    atomic.Int64
	syncTime atomic.Int64 // nanoseconds spent in fsync(2)
)

// Sync fsyncs f and counts it and the time it took. Every fsync the
// kernel makes goes through Sync, so Syncs is the number of fsyncs this
// process made and SyncTime how long they took.
func Sync(f *os.File) error {
	syncs.Add(1)
	t := time.Now()
	err := f.Sync()
	syncTime.Add(int64(time.Since(t)))
	return err
}

// Syncs is the number of fsyncs made through Sync so far by this process.
func Syncs() int64 { return syncs.Load() }

// SyncTime is the wall time spent in the fsyncs of Syncs (a benchmark's
// "plus the fsyncs", ADR 0020).
func SyncTime() time.Duration { return time.Duration(syncTime.Load()) }

// ReplaceVolatile replaces path with b (mode applied) by rename, with no
// fsync at all: readers never see a partial file while the machine runs,
// but after a power loss or kernel crash the file may be the old one,
// missing, empty or torn. Only for files that describe live processes
// (process records), which no power loss leaves alive: their readers must
// treat an unreadable file from before the current boot as stale.
func ReplaceVolatile(path string, b []byte, mode os.FileMode) error {
	tmp, err := stageBytes(path, mode, b, false)
	if err != nil {
		return err
	}
	return renameOrRemove(tmp, path)
}

// renameOrRemove renames tmp to path, removing tmp only when that fails
// (after a rename there is nothing left to remove: no wasted unlink).
func renameOrRemove(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteFile replaces path with b (mode applied) and fsyncs the directory,
// so the new content survives a crash once WriteFile returns.
func WriteFile(path string, b []byte, mode os.FileMode) error {
	return Write(path, mode, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// ReplaceFile is WriteFile without the directory fsync: after a crash the
// previous file may come back, never a partial one. For derived files
// (run.json) that a later writer repairs.
func ReplaceFile(path string, b []byte, mode os.FileMode) error {
	tmp, err := stageBytes(path, mode, b, true)
	if err != nil {
		return err
	}
	return renameOrRemove(tmp, path)
}

// Write streams the new content of path through write (buffered), then
// renames it into place and fsyncs the directory. When write fails,
// nothing at path changes.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := stage(path, mode, write)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// CreateExclusive writes b to path only if path does not exist: the staged
// file is linked into place, which fails with fs.ErrExist instead of
// replacing anything (the O_EXCL guarantee without a half-written file).
func CreateExclusive(path string, b []byte, mode os.FileMode) error {
	return WriteExclusive(path, mode, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// WriteExclusive streams the content of a new file through write, then
// links it into place: it fails with fs.ErrExist, and leaves path as it
// was, if path exists by then (a check-then-write would race).
func WriteExclusive(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := stage(path, mode, write)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, making renames and links in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return Sync(d)
}

// stage writes a fsynced temporary file next to path and returns its name.
func stage(path string, mode os.FileMode, write func(io.Writer) error) (string, error) {
	return stageWith(path, mode, write, true)
}

// stageWith is stage; without fsync it only writes the temporary file.
func stageWith(path string, mode os.FileMode, write func(io.Writer) error, fsync bool) (string, error) {
	return stageFile(path, mode, fsync, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// stageBytes is stageWith for bytes in memory: one write(2), no 1 MiB
// buffer (a process record is written twice per governed tool call).
func stageBytes(path string, mode os.FileMode, b []byte, fsync bool) (string, error) {
	return stageFile(path, mode, fsync, func(f *os.File) error { _, err := f.Write(b); return err })
}

func stageFile(path string, mode os.FileMode, fsync bool, write func(*os.File) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil && fsync {
		err = Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}
