//go:build linux

package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep a cache tree may nest (the walk keeps about one
// open descriptor per level and worker).
const maxDepth = 512

// direntBuf is the getdents64 buffer of one directory read.
const direntBuf = 64 << 10

// walkTree (Linux) computes what walkTreePortable computes — the same
// digest and stamp, the same refusals — without resolving a path: each
// directory is opened with openat(parent, name, O_NOFOLLOW|O_DIRECTORY)
// and fstat'ed through its descriptor, read with getdents64 in 64 KiB
// batches, and every other entry is fstatat'ed (AT_SYMLINK_NOFOLLOW)
// relative to it. Directories are spread over GOMAXPROCS workers taking
// the most recently found first, so open descriptors stay near workers ×
// depth. The lines are hashed afterwards, sequentially, in the portable
// walk's order (depth first, names in byte order). With openDirs, every
// directory the harness owns that is not mode 0777 is fchmod'ed to 0777
// first, and every regular file it owns that its owner may write gains
// 0666 (the sandbox user writes the tree), as openForSandbox does.
func walkTree(dir string, openDirs bool) (Tree, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Tree{}, asCacheError(&fs.PathError{Op: "open", Path: dir, Err: err})
	}
	root := &wnode{fd: fd, isDir: true}
	w := &walker{open: openDirs, uid: uint32(os.Geteuid())}
	w.cond = sync.NewCond(&w.mu)
	w.readDir(root, dir, make([]byte, direntBuf))
	if root.err != nil {
		return Tree{}, asCacheError(root.err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range n {
		wg.Go(w.work)
	}
	wg.Wait()
	if err := w.fatal.Load(); err != nil {
		return Tree{}, *err
	}
	return digestNodes(root)
}

// wnode is one entry the walk found.
type wnode struct {
	name   string
	isDir  bool
	parent *wnode
	depth  int
	// from the entry's stat
	mode, uid          uint32
	size, mtime, ctime int64
	ino                uint64
	target             string   // a symlink's target
	kids               []*wnode // a directory's entries, by name
	err                error    // what made this entry unusable
	fd                 int      // a directory's descriptor while kids are opened
	pending            atomic.Int32
}

// walker is the shared state of one walk's workers.
type walker struct {
	mu      sync.Mutex
	cond    *sync.Cond
	stack   []*wnode // directories to open and read
	active  int      // directories queued or being read
	entries atomic.Int64
	fatal   atomic.Pointer[error]
	open    bool
	uid     uint32
}

func (w *walker) work() {
	buf := make([]byte, direntBuf)
	for {
		w.mu.Lock()
		for len(w.stack) == 0 && w.active > 0 {
			w.cond.Wait()
		}
		if len(w.stack) == 0 {
			w.mu.Unlock()
			return
		}
		n := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.mu.Unlock()
		w.visit(n, buf)
		w.mu.Lock()
		w.active--
		if w.active == 0 {
			w.cond.Broadcast()
		}
		w.mu.Unlock()
	}
}

// push queues a directory's subdirectories (or closes it when it has none).
func (w *walker) push(n *wnode) {
	var dirs []*wnode
	for _, k := range n.kids {
		if k.isDir && k.err == nil {
			dirs = append(dirs, k)
		}
	}
	if len(dirs) == 0 {
		unix.Close(n.fd)
		return
	}
	n.pending.Store(int32(len(dirs)))
	w.mu.Lock()
	for i := len(dirs) - 1; i >= 0; i-- { // first name on top
		w.stack = append(w.stack, dirs[i])
	}
	w.active += len(dirs)
	w.cond.Broadcast()
	w.mu.Unlock()
}

// done is a directory whose subdirectory d has been opened (or failed).
func (n *wnode) done() {
	if n.pending.Add(-1) == 0 {
		unix.Close(n.fd)
	}
}

// visit opens directory n under its parent and reads it.
func (w *walker) visit(n *wnode, buf []byte) {
	if w.fatal.Load() != nil {
		n.parent.done()
		return
	}
	fd, err := unix.Openat(n.parent.fd, n.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		// Replaced since the parent was read: take the entry as it is now.
		n.isDir = false
		statAt(n.parent.fd, n)
		if n.err == nil && n.mode&unix.S_IFMT == unix.S_IFDIR {
			n.err = errors.New(n.name + ": replaced while the cache was walked")
		}
		n.parent.done()
		return
	}
	n.parent.done()
	if err != nil {
		n.err = &fs.PathError{Op: "openat", Path: n.name, Err: err}
		return
	}
	n.fd = fd
	w.readDir(n, n.name, buf)
}

// readDir fstat's the open directory n (opening it for the sandbox user
// first if asked), then reads and stats its entries and queues its
// subdirectories. It always consumes n.fd.
func (w *walker) readDir(n *wnode, name string, buf []byte) {
	if n.depth >= maxDepth {
		w.tooLarge()
		unix.Close(n.fd)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(n.fd, &st); err != nil {
		n.err = err
		unix.Close(n.fd)
		return
	}
	if w.open && n.parent != nil && st.Mode&0o777 != 0o777 && st.Uid == w.uid {
		if unix.Fchmod(n.fd, 0o777) == nil {
			_ = unix.Fstat(n.fd, &st)
		}
	}
	n.setStat(&st)
	if err := w.readEntries(n, buf); err != nil {
		n.err = &fs.PathError{Op: "readdirent", Path: name, Err: err}
		unix.Close(n.fd)
		return
	}
	if w.entries.Add(int64(len(n.kids))) > MaxEntries {
		w.tooLarge()
		unix.Close(n.fd)
		return
	}
	w.push(n)
}

func (w *walker) tooLarge() {
	err := error(&Error{Reason: ReasonTooLarge, Msg: fmt.Sprintf("more than %d entries or %d levels", MaxEntries, maxDepth)})
	w.fatal.CompareAndSwap(nil, &err)
}

// readEntries lists n's directory (getdents64) and stats every entry that
// is not a directory; directories are stat'ed when they are opened.
func (w *walker) readEntries(n *wnode, buf []byte) error {
	for {
		m, err := unix.Getdents(n.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if m <= 0 {
			break
		}
		if err := n.parseDirents(buf[:m]); err != nil {
			return err
		}
	}
	slices.SortFunc(n.kids, func(a, b *wnode) int { return strings.Compare(a.name, b.name) })
	for _, k := range n.kids {
		if !k.isDir {
			statAt(n.fd, k)
			if w.open && k.err == nil && k.mode&unix.S_IFMT == unix.S_IFREG && k.uid == w.uid &&
				widen(k.mode&0o777, k.mode&(unix.S_ISUID|unix.S_ISGID) != 0) {
				openFileAt(n.fd, k)
			}
			// d_type unknown (or changed): a directory is opened like the others.
			k.isDir = k.err == nil && k.mode&unix.S_IFMT == unix.S_IFDIR
		}
	}
	return nil
}

// parseDirents appends the linux_dirent64 records in b to n.kids:
// d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name NUL-terminated.
func (n *wnode) parseDirents(b []byte) error {
	for len(b) > 0 {
		if len(b) < 19 {
			return errors.New("short dirent record")
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 20 || reclen > len(b) {
			return errors.New("bad dirent record length")
		}
		typ, raw := b[18], b[19:reclen]
		b = b[reclen:]
		i := bytes.IndexByte(raw, 0)
		if i < 0 {
			return errors.New("dirent name not terminated")
		}
		name := string(raw[:i])
		if name == "." || name == ".." {
			continue
		}
		n.kids = append(n.kids, &wnode{name: name, isDir: typ == unix.DT_DIR, parent: n, depth: n.depth + 1})
	}
	return nil
}

// statAt fstatat's entry k of the open directory dfd and reads a
// symlink's target.
func statAt(dfd int, k *wnode) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, k.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		k.err = &fs.PathError{Op: "lstat", Path: k.name, Err: err}
		return
	}
	k.setStat(&st)
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		lb := make([]byte, 256)
		for {
			m, err := unix.Readlinkat(dfd, k.name, lb)
			if err != nil {
				k.err = &fs.PathError{Op: "readlink", Path: k.name, Err: err}
				return
			}
			if m < len(lb) {
				k.target = string(lb[:m])
				return
			}
			if len(lb) >= 1<<16 {
				k.err = &fs.PathError{Op: "readlink", Path: k.name, Err: unix.ENAMETOOLONG}
				return
			}
			lb = make([]byte, 4*len(lb))
		}
	}
}

// openFileAt gives the sandbox user write access to regular file k of
// directory dfd (openForSandbox): through a descriptor opened without
// following a symlink (and without blocking on a FIFO swapped in), after
// checking it is still the inode that was stat'ed.
func openFileAt(dfd int, k *wnode) {
	fd, err := unix.Openat(dfd, k.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != k.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	if unix.Fchmod(fd, st.Mode&0o777|0o666) == nil && unix.Fstat(fd, &st) == nil {
		k.setStat(&st)
	}
}

func (k *wnode) setStat(st *unix.Stat_t) {
	k.uid = st.Uid
	k.mode = st.Mode
	k.size = st.Size
	k.mtime = st.Mtim.Sec*1e9 + st.Mtim.Nsec
	k.ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
	k.ino = st.Ino
}

// digestNodes hashes the walked tree in walk order; the first unusable
// entry in that order is the error.
func digestNodes(root *wnode) (Tree, error) {
	d := &lineHash{h: sha256.New()}
	s := &lineHash{h: sha256.New()}
	var t Tree
	var rel []byte
	var walk func(n *wnode) error
	walk = func(n *wnode) error {
		for _, k := range n.kids {
			mark := len(rel)
			if mark > 0 {
				rel = append(rel, '/')
			}
			rel = append(rel, k.name...)
			if err := k.line(d, s, rel, &t); err != nil {
				return err
			}
			if k.isDir {
				if err := walk(k); err != nil {
					return err
				}
			}
			rel = rel[:mark]
		}
		return nil
	}
	if err := walk(root); err != nil {
		return Tree{}, asCacheError(err)
	}
	t.Digest, t.Stamp = d.sum(), s.sum()
	return t, nil
}

// line appends k's digest and stamp lines (entryLine's format), or
// returns why k may not be in a cache.
func (k *wnode) line(d, s *lineHash, rel []byte, t *Tree) error {
	if k.err != nil {
		return k.err
	}
	var kind byte
	switch k.mode & unix.S_IFMT {
	case unix.S_IFDIR:
		kind = 'd'
	case unix.S_IFREG:
		kind = 'f'
		t.Bytes += k.size
	case unix.S_IFLNK:
		kind = 'l'
		if escapes(string(rel), k.target) {
			return &Error{Reason: ReasonSymlink, Msg: fmt.Sprintf("%s is a symlink to %q, which leaves the cache directory", rel, k.target)}
		}
	default:
		return &Error{Reason: ReasonSpecial, Msg: fmt.Sprintf("%s is a %s, not a directory, regular file or symlink", rel, goMode(k.mode).Type())}
	}
	t.Entries++
	b := append(d.buf, kind, ' ')
	b = strconv.AppendUint(b, uint64(goMode(k.mode)&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)), 8)
	b = append(b, ' ')
	b = strconv.AppendInt(b, k.size, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, k.mtime, 10)
	b = append(b, ' ')
	b = append(b, rel...)
	if kind == 'l' {
		b = append(b, " -> "...)
		b = append(b, k.target...)
	}
	start := len(d.buf)
	s.buf = append(s.buf, b[start:]...)
	d.buf = append(b, '\n')
	s.buf = append(s.buf, ' ')
	s.buf = strconv.AppendUint(s.buf, k.ino, 10)
	s.buf = append(s.buf, ' ')
	s.buf = strconv.AppendInt(s.buf, k.ctime, 10)
	s.buf = append(s.buf, '\n')
	d.flush()
	s.flush()
	return nil
}

// goMode is os.FileMode of a stat mode, as os.Lstat computes it.
func goMode(m uint32) fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		fm |= fs.ModeDevice
	case unix.S_IFCHR:
		fm |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		fm |= fs.ModeDir
	case unix.S_IFIFO:
		fm |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		fm |= fs.ModeSymlink
	case unix.S_IFSOCK:
		fm |= fs.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		fm |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}

// lineHash batches lines into a hash.
type lineHash struct {
	h   hash.Hash
	buf []byte
}

func (l *lineHash) flush() {
	if len(l.buf) >= 32<<10 {
		l.h.Write(l.buf)
		l.buf = l.buf[:0]
	}
}

func (l *lineHash) sum() string {
	l.h.Write(l.buf)
	l.buf = l.buf[:0]
	return sum(l.h)
}
