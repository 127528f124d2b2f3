package run

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// VerifyLog verifies the event log of the run in dir against the binding
// the directory itself gives: its name as the run id, the hash of its
// contract.json, and the source of the first line. It streams and keeps no
// events. Refusals are *eventlog.ChainError.
//
// A segmented log (sealed events.NNNNNNNN.ndjson files beside the active
// events.ndjson) is read whole, in chain order; a refusal names the file.
func VerifyLog(dir string) (eventlog.Summary, error) {
	dir, _, done, err := readable(dir)
	if err != nil {
		return eventlog.Summary{}, err
	}
	defer done()
	want, err := logBinding(dir)
	if err != nil {
		return eventlog.Summary{}, err
	}
	return eventlog.VerifyPath(filepath.Join(dir, EventsFile), want)
}

// ReadLog is VerifyLog returning the events.
func ReadLog(dir string) ([]eventlog.Event, error) {
	dir, _, done, err := readable(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	want, err := logBinding(dir)
	if err != nil {
		return nil, err
	}
	return eventlog.ReadFile(filepath.Join(dir, EventsFile), want)
}

// logBinding is the binding the directory gives, with the source of line 1
// of the log's first file (nil when line 1 is malformed: the reader says so).
func logBinding(dir string) (*eventlog.Binding, error) {
	cb, err := os.ReadFile(filepath.Join(dir, ContractFile))
	if err != nil {
		return nil, err
	}
	files, err := eventlog.Files(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(files[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := &eventlog.Binding{Run: filepath.Base(dir), Contract: canon.SumBytes(cb)}
	// The source is whatever line 1 says; every later line must repeat it.
	line, _ := bufio.NewReaderSize(io.LimitReader(f, eventlog.MaxLine+1), 64<<10).ReadSlice('\n')
	var first struct {
		Source *eventlog.Source `json:"source"`
	}
	if strictjson.DecodeOpen(line, &first) == nil && first.Source != nil {
		want.Source = *first.Source
	} else {
		want = nil // line 1 is malformed: let the reader say so
	}
	return want, nil
}

// VerifyLogAt is VerifyLog that also returns the hash and time of event n
// (empty when the log holds fewer than n), for a checkpoint taken at
// length n.
func VerifyLogAt(dir string, n int) (eventlog.Summary, eventlog.At, error) {
	dir, _, done, err := readable(dir)
	if err != nil {
		return eventlog.Summary{}, eventlog.At{}, err
	}
	defer done()
	want, err := logBinding(dir)
	if err != nil {
		return eventlog.Summary{}, eventlog.At{}, err
	}
	return eventlog.VerifyPathAt(filepath.Join(dir, EventsFile), want, n)
}
