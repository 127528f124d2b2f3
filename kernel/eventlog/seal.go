package eventlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/durable"
)

// SegmentSizeEnv overrides DefaultSegmentSize: a number of bytes, or a
// number with the suffix KiB, MiB or GiB ("4KiB", "10MiB", "65536").
const SegmentSizeEnv = "PROOFGATE_SEGMENT_SIZE"

// DefaultSegmentSize is the length past which the active file is sealed.
const DefaultSegmentSize = 10 << 20

// maxSegmentSize bounds SegmentSizeEnv.
const maxSegmentSize = 1 << 40

// SegmentSize is the seal threshold SegmentSizeEnv sets (DefaultSegmentSize
// when unset). A malformed value is an error naming the variable.
func SegmentSize() (int64, error) {
	v, ok := os.LookupEnv(SegmentSizeEnv)
	if !ok || v == "" {
		return DefaultSegmentSize, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", SegmentSizeEnv, v, err)
	}
	return n, nil
}

// ParseSize parses a size as SegmentSizeEnv takes it.
func ParseSize(v string) (int64, error) {
	num, mul := v, int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mul = s, u.mul
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" || len(num) > 13 {
		return 0, errors.New("want a positive number of bytes, optionally with KiB, MiB or GiB (e.g. 4KiB, 10MiB)")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > maxSegmentSize/mul {
		return 0, fmt.Errorf("want 1 byte to %d GiB", maxSegmentSize>>30)
	}
	return n * mul, nil
}

// sealLocked seals the active file as the next segment and starts an empty
// active file. The steps, each a crash point (CrashEnv "seal<k>:<n>"):
//
//  1. link the active file to its segment name and fsync the directory:
//     both names are one file, and readers, seeing the active file be the
//     last segment, read it once (as the segment);
//  2. write the head index for the new state;
//  3. create an empty temporary file, fsynced;
//  4. rename it over the active file and fsync the directory.
//
// A crash after step 1 leaves a log that reads back whole; the next Open
// finishes steps 3 and 4. A failure before the link leaves the log as it
// was (the next Flush tries again); a failure after it makes the Log refuse
// appends until it is reopened, which finishes the seal.
func (l *Log) sealLocked() {
	if l.nsealed >= MaxSegments {
		return
	}
	seg := filepath.Join(filepath.Dir(l.path), SegmentName(l.path, l.nsealed+1))
	if err := os.Link(l.path, seg); err != nil {
		return
	}
	n := crash.seals.Add(1)
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		l.err = fmt.Errorf("seal %s: %w", seg, err)
		return
	}
	sealCrash(1, n)
	l.nsealed++
	l.lastFile, l.asize = seg, 0
	if l.baseFile == l.path {
		l.baseFile = seg // the same bytes, under the segment's name
	}
	l.writeIndex()
	sealCrash(2, n)
	f, err := startActive(l.path, n)
	if err != nil {
		l.err = fmt.Errorf("seal %s: %w", seg, err)
		return
	}
	l.f.Close()
	l.f = f
}

// startActive replaces the active file at path with an empty one (steps 3
// and 4 of a seal) and returns it open for appending.
func startActive(path string, seal int64) (*os.File, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".seal-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := durable.Sync(tmp); err != nil {
		tmp.Close()
		return nil, err
	}
	tmp.Close()
	sealCrash(3, seal)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	sealCrash(4, seal)
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
}

// finishSeal completes a seal a crash interrupted after its link: the
// active file is the last sealed segment (or a byte-identical copy).
func finishSeal(path string, nsealed int, afi os.FileInfo) (bool, error) {
	if nsealed == 0 {
		return false, nil
	}
	seg := filepath.Join(filepath.Dir(path), SegmentName(path, nsealed))
	if !duplicate(seg, afi, path) {
		return false, nil
	}
	f, err := startActive(path, 0)
	if err != nil {
		return false, fmt.Errorf("finish the seal of %s: %w", seg, err)
	}
	return true, f.Close()
}

// notExist reports whether path does not exist.
func notExist(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}
