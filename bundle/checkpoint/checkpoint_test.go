package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

func setup(t *testing.T) (*key.Signer, *trust.Store) {
	t.Helper()
	k := keytest.New(t)
	st := trust.New()
	if _, err := st.Add(k.PubPEM, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	return k.Signer, st
}

var binding = eventlog.Binding{Run: "20260101T000000.000Z-0000abcd",
	Source:   eventlog.Source{Commit: "c0ffee", Tree: "7ree"},
	Contract: "sha256:" + "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"[:64]}

// writeLog writes a real chained log whose k-th data (1-based) is alt.
func writeLog(t *testing.T, n, k int, alt string) []eventlog.Event {
	t.Helper()
	l, err := eventlog.Create(filepath.Join(t.TempDir(), "events.ndjson"), binding)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= n; i++ {
		v := "original"
		if i == k {
			v = alt
		}
		if _, err := l.Append("test.event", map[string]any{"i": i, "v": v}); err != nil {
			t.Fatal(err)
		}
	}
	return l.Events()
}

// rechain edits event k's data and recomputes seq, prev and hash from k on,
// then proves the result is a chain the event log reader accepts.
func rechain(t *testing.T, events []eventlog.Event, k int) []eventlog.Event {
	t.Helper()
	out := append([]eventlog.Event{}, events...)
	out[k-1].Data = json.RawMessage(fmt.Sprintf(`{"i":%d,"v":"forged"}`, k))
	return rechainFrom(t, out, k)
}

func rechainFrom(t *testing.T, out []eventlog.Event, k int) []eventlog.Event {
	t.Helper()
	var buf bytes.Buffer
	for i := range out {
		if i >= k-1 {
			out[i].Seq = uint64(i + 1)
			if i > 0 {
				prev := out[i-1].Hash
				out[i].Prev = &prev
			}
			h, err := eventlog.Hash(out[i])
			if err != nil {
				t.Fatal(err)
			}
			out[i].Hash = h
		}
		line, err := canon.Marshal(out[i])
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	got, err := eventlog.Read(&buf, nil)
	if err != nil {
		t.Fatalf("rechained log is not a valid chain: %v", err)
	}
	return got
}

func reasonOf(err error) Reason {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}

func TestVerifyLog(t *testing.T) {
	s, st := setup(t)
	events := writeLog(t, 5, 0, "")
	c := Checkpoint{V: 1, Run: binding.Run, Length: 3, Head: events[2].Hash, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	cp, err := Sign(s, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyLog(cp, st, events); err != nil {
		t.Fatalf("intact log: %v", err)
	}
	if err := VerifyLog(cp, st, events[:3]); err != nil {
		t.Fatalf("log exactly at the checkpoint: %v", err)
	}
	// Entry 2 rewritten, every later link recomputed: a valid chain, another head at 3.
	if err := VerifyLog(cp, st, rechain(t, events, 2)); reasonOf(err) != Rewritten {
		t.Fatalf("rewritten: %v", err)
	}
	// Entry at exactly the checkpoint length rewritten.
	if err := VerifyLog(cp, st, rechain(t, events, 3)); reasonOf(err) != Rewritten {
		t.Fatalf("rewritten at length: %v", err)
	}
	// Entries after the checkpoint are not covered by it.
	if err := VerifyLog(cp, st, rechain(t, events, 4)); err != nil {
		t.Fatalf("entry after the checkpoint flagged: %v", err)
	}
	// Removed entries with the chain recomputed after them: a rewrite.
	cut := append(append([]eventlog.Event{}, events[:1]...), events[2:]...)
	if err := VerifyLog(cp, st, rechainFrom(t, cut, 2)); reasonOf(err) != Rewritten {
		t.Fatalf("removed entry: %v", err)
	}
	if err := VerifyLog(cp, st, events[:2]); reasonOf(err) != Truncated {
		t.Fatalf("truncated: %v", err)
	}
	other := append([]eventlog.Event{}, events...)
	other[0].Run = "other"
	if err := VerifyLog(cp, st, other); reasonOf(err) != ForeignRun {
		t.Fatalf("foreign: %v", err)
	}
	// Unknown key, revoked key, tampered envelope.
	if err := VerifyLog(cp, trust.New(), events); reasonOf(err) != Invalid {
		t.Fatalf("unknown key: %v", err)
	}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st.Revoke(s.ID, &at)
	err = VerifyLog(cp, st, events)
	var ke *trust.KeyError
	if !errors.As(err, &ke) || ke.Reason != trust.KeyRevoked {
		t.Fatalf("revoked key: %v", err)
	}
	if err := VerifyLog(cp[:len(cp)-3], st, events); reasonOf(err) != Invalid {
		t.Fatalf("torn envelope: %v", err)
	}
}

func TestPayloadValidation(t *testing.T) {
	bad := []Checkpoint{
		{V: 2, Run: "r", Length: 1, Head: "sha256:" + string(make([]byte, 0)), Time: "2026-01-01T00:00:00Z"},
		{V: 1, Run: "", Length: 1},
		{V: 1, Run: "r", Length: 0},
		{V: 1, Run: "r", Length: 1, Head: "md5:x", Time: "2026-01-01T00:00:00Z"},
	}
	for _, c := range bad {
		if _, err := Payload(c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// TestVerifyRefusesCollidingPayloadMembers: a signed checkpoint payload
// with a duplicate or case-variant length would pin one length for
// encoding/json (the later one) and another for a first-wins reader.
func TestVerifyRefusesCollidingPayloadMembers(t *testing.T) {
	s, st := setup(t)
	head := "sha256:" + strings.Repeat("a", 64)
	for name, tc := range map[string]struct{ payload, path string }{
		"duplicate length":    {`{"head":"` + head + `","length":2,"length":5,"run":"r","time":"2026-01-01T00:00:00Z","v":1}`, "length"},
		"case variant Length": {`{"Length":2,"head":"` + head + `","length":5,"run":"r","time":"2026-01-01T00:00:00Z","v":1}`, "Length"},
	} {
		env, err := envelope.Sign(s, PayloadType, []byte(tc.payload))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Verify(env, st)
		if err == nil || reasonOf(err) != Invalid || !strings.Contains(err.Error(), "payload: "+tc.path+": ") {
			t.Errorf("%s: err = %v, want a refusal naming %s", name, err, tc.path)
		}
	}
}
