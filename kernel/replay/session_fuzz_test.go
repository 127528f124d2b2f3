package replay_test

import (
	"encoding/json"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

var sessionTypes = []string{replay.TypeSessionStarted, replay.TypeSessionResumed, replay.TypeSessionEnded, replay.TypeTurnStarted,
	replay.TypeTurnFinished, replay.TypeToolRequested, replay.TypeToolDecided, replay.TypeToolStarted, replay.TypeToolProgress,
	replay.TypeToolFinished, replay.TypeState}

// FuzzSessionReceipts appends two arbitrary session events to a valid
// session and replays: never a panic, and whatever is accepted keeps the
// receipt invariants (nothing started without an allowing decision, no
// approval bound to another input, nothing open after IMPLEMENTING).
func FuzzSessionReceipts(f *testing.F) {
	b := newLog(&testing.T{}, true).started().greet()
	for i, e := range b.ev[2:] {
		f.Add(byte(i), []byte(e.Data), byte(0), []byte(`{}`))
	}
	f.Add(byte(6), []byte(`{"action":"a-000000000001","by":"human","decision":"approve","actor":"x","input_hash":"sha256:`+hex64('a')+`"}`), byte(7), []byte(`{}`))
	f.Fuzz(func(t *testing.T, t1 byte, d1 []byte, t2 byte, d2 []byte) {
		if !json.Valid(d1) || !json.Valid(d2) {
			return
		}
		b := newLog(t, true).started().greet()
		for _, x := range []struct {
			typ  byte
			data []byte
		}{{t1, d1}, {t2, d2}} {
			b.ev = append(b.ev, eventlog.Event{Type: sessionTypes[int(x.typ)%len(sessionTypes)], Contract: b.ev[0].Contract, Source: b.ev[0].Source, Data: x.data})
		}
		rep, err := replay.Fold(b.c, b.ev)
		if err != nil {
			return
		}
		for _, s := range rep.Sessions {
			if s.Open && rep.State != replay.Implementing {
				t.Fatalf("session %s open while %s", s.ID, rep.State)
			}
			for _, a := range s.Calls {
				if a.Receipt != "" && a.Decision != "allow" && !(a.Decision == "require-approval" && a.Approval == "approve") {
					t.Fatalf("action %+v has a receipt without an allowing decision", a)
				}
			}
		}
	})
}
