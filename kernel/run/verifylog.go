package run

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/strictjson"
)

// VerifyLog verifies the event log of the run in dir against the binding
// the directory itself gives: its name as the run id, the hash of its
// contract.json, and the source of the first line. It streams and keeps no
// events. Refusals are *eventlog.ChainError.
func VerifyLog(dir string) (eventlog.Summary, error) {
	dir, _, done, err := readable(dir)
	if err != nil {
		return eventlog.Summary{}, err
	}
	defer done()
	f, want, err := openLog(dir)
	if err != nil {
		return eventlog.Summary{}, err
	}
	defer f.Close()
	return eventlog.Verify(f, want)
}

// ReadLog is VerifyLog returning the events.
func ReadLog(dir string) ([]eventlog.Event, error) {
	dir, _, done, err := readable(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	f, want, err := openLog(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return eventlog.Read(f, want)
}

func openLog(dir string) (*os.File, *eventlog.Binding, error) {
	cb, err := os.ReadFile(filepath.Join(dir, ContractFile))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, nil, err
	}
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
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, want, nil
}
