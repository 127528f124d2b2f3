package blob

import "sync"

// Spares puts blobs into a Store as PutMany does, staging each new blob in
// a temporary file created ahead of time: Fill creates files in the
// background until n are ready. Creating a file allocates an inode, which
// on ext4 without a journal means searching past every inode the file
// system freed near it in the last one to six minutes (ADR 0028): a few
// hundred microseconds on a busy machine, paid by an agent session's
// recorder twice per tool call (its new input and its new output). The
// recorder calls Fill when a tool starts, so the search overlaps the
// tool's run, when no fsync of the call is in flight (a create beside a
// running fsync only made the fsync slower). What lands in the store is
// the same: each new blob fsynced, linked, one directory fsync.
//
// Close removes the unused files; a process that dies leaves at most n
// empty temporary files in the blob directory, which no reader lists (as
// a crash in the middle of a Put leaves one).
type Spares struct {
	s *Store
	n int

	mu      sync.Mutex
	free    []*Writer
	filling bool
	closed  bool
	wg      sync.WaitGroup
}

// Spares returns a Spares of s keeping up to n files ready.
func (s *Store) Spares(n int) *Spares { return &Spares{s: s, n: max(n, 1)} }

// PutMany is Store.PutMany through the ready files.
func (sp *Spares) PutMany(digests []string, bs [][]byte) (int64, error) {
	return sp.s.putMany(digests, bs, sp.take)
}

func (sp *Spares) take() (*Writer, error) {
	sp.mu.Lock()
	if k := len(sp.free); k > 0 {
		w := sp.free[k-1]
		sp.free = sp.free[:k-1]
		sp.mu.Unlock()
		return w, nil
	}
	sp.mu.Unlock()
	return sp.s.Create()
}

// Fill starts creating files, in the background, until n are ready.
func (sp *Spares) Fill() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed || sp.filling || len(sp.free) >= sp.n {
		return
	}
	sp.filling = true
	sp.wg.Add(1)
	go sp.fill()
}

func (sp *Spares) fill() {
	defer sp.wg.Done()
	for {
		sp.mu.Lock()
		if sp.closed || len(sp.free) >= sp.n {
			sp.filling = false
			sp.mu.Unlock()
			return
		}
		sp.mu.Unlock()
		w, err := sp.s.Create()
		sp.mu.Lock()
		if err != nil || sp.closed {
			sp.filling = false
			sp.mu.Unlock()
			if w != nil {
				w.Abort()
			}
			return
		}
		sp.free = append(sp.free, w)
		sp.mu.Unlock()
	}
}

// Close waits for a running Fill and removes the unused files.
func (sp *Spares) Close() {
	sp.mu.Lock()
	sp.closed = true
	sp.mu.Unlock()
	sp.wg.Wait()
	sp.mu.Lock()
	free := sp.free
	sp.free = nil
	sp.mu.Unlock()
	for _, w := range free {
		w.Abort()
	}
}
