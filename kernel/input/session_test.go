package input_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/input"
)

// A generated agent session: every turn's input is the whole conversation
// so far, as a coding agent sends it to a model-backed tool. Deterministic
// (a fixed PCG seed), with a system prompt and tool definitions of a few KB,
// and per turn an assistant message (reasoning text and a tool call) and a
// tool result (file contents, command output) of a few KB each.

const sessionTurns = 28

var vocabulary = strings.Fields(`the a function test error file run check contract input
output hash blob manifest session turn tool call policy gate allow block approval receipt
digest canonical message bundle verify sign key trust chain event log replay state diff
patch repository branch commit merge review build fail pass timeout docker process network
workspace mount env path config value return nil string int byte slice map struct import
package go vet lint fix refactor rename move add remove update handle parse decode encode`)

type gen struct{ r *rand.Rand }

func (g *gen) words(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[g.r.IntN(len(vocabulary))])
		if g.r.IntN(12) == 0 {
			b.WriteString(".\n")
		}
	}
	return b.String()
}

func (g *gen) code(lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "%4d\t%sfunc %s%d(%s %s) error { return %s(%q) }\n", g.r.IntN(900)+1,
			strings.Repeat("\t", g.r.IntN(3)), vocabulary[g.r.IntN(len(vocabulary))], g.r.IntN(100),
			vocabulary[g.r.IntN(len(vocabulary))], vocabulary[g.r.IntN(len(vocabulary))],
			vocabulary[g.r.IntN(len(vocabulary))], g.words(4))
	}
	return b.String()
}

type turnInput struct {
	Model     string           `json:"model"`
	MaxTokens int              `json:"max_tokens"`
	System    string           `json:"system"`
	Tools     []map[string]any `json:"tools"`
	Messages  []map[string]any `json:"messages"`
}

// session returns the raw input of every turn.
func session(turns int) [][]byte {
	g := &gen{r: rand.New(rand.NewPCG(13, 2026))}
	in := turnInput{Model: "agent-model-2026-11", MaxTokens: 8192, System: g.words(600)}
	for _, name := range []string{"read_file", "edit_file", "run_tests", "grep", "list_dir", "git_diff"} {
		in.Tools = append(in.Tools, map[string]any{"name": name, "description": g.words(60),
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": g.words(15)}}}})
	}
	in.Messages = []map[string]any{{"role": "user", "content": "Task: " + g.words(250)}}
	var out [][]byte
	for t := 0; t < turns; t++ {
		b, err := json.Marshal(in)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
		id := fmt.Sprintf("toolu_%04d_%08x", t, g.r.Uint32())
		in.Messages = append(in.Messages, map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": g.words(80 + g.r.IntN(200))},
			map[string]any{"type": "tool_use", "id": id, "name": in.Tools[g.r.IntN(len(in.Tools))]["name"],
				"input": map[string]any{"path": "kernel/" + vocabulary[g.r.IntN(len(vocabulary))] + ".go"}},
		}}, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": g.code(25 + g.r.IntN(50))},
		}})
	}
	return out
}

type turnStat struct {
	whole, written, newMessages int64
}

// storeSession stores every turn, returning per-turn figures.
func storeSession(t testing.TB, bs *blob.Store, raws [][]byte) []turnStat {
	seen := map[string]bool{}
	var stats []turnStat
	for i, raw := range raws {
		c, err := input.Canonical(raw)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		st, err := input.Store(bs, c)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if !st.Manifest || st.Hash != input.Hash(c) {
			t.Fatalf("turn %d: %+v", i+1, st)
		}
		s := turnStat{whole: int64(len(c)), written: st.Written}
		var msgs struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(c, &msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs.Messages {
			if d := canon.SumBytes(m); !seen[d] {
				seen[d] = true
				s.newMessages += int64(len(m))
			}
		}
		stats = append(stats, s)
	}
	return stats
}

func TestSessionDedup(t *testing.T) {
	dir := t.TempDir()
	bs := blob.New(dir)
	raws := session(sessionTurns)
	stats := storeSession(t, bs, raws)
	var whole, written int64
	first, last := stats[0], stats[len(stats)-1]
	minOver, maxOver := int64(1<<62), int64(0)
	for i, s := range stats {
		whole += s.whole
		written += s.written
		over := s.written - s.newMessages
		t.Logf("turn %2d: input %7d B, written %6d B (new messages %6d B, beyond them %4d B)", i+1, s.whole, s.written, s.newMessages, over)
		if i > 0 {
			minOver, maxOver = min(minOver, over), max(maxOver, over)
		}
	}
	ratio := float64(whole) / float64(written)
	t.Logf("whole inputs %d B, with manifests %d B: %.1fx", whole, written, ratio)
	if whole < 2_000_000 {
		t.Fatalf("the generated session is %d B, smaller than a realistic one", whole)
	}
	if ratio < 12.7 {
		t.Fatalf("dedup ratio %.2f does not beat 12.7", ratio)
	}
	// Flat: beyond its new messages, a turn writes one link per new message
	// and one manifest, whatever the conversation's length.
	if lo, hi := first.written-first.newMessages, last.written-last.newMessages; hi > 2*lo {
		t.Fatalf("last turn writes %d B beyond its messages, first %d B", hi, lo)
	}
	if maxOver > 2*minOver || maxOver > 1024 {
		t.Fatalf("bytes beyond new messages range %d..%d B over turns 2..%d", minOver, maxOver, len(stats))
	}
	// What was written is what is on disk, and every turn rebuilds.
	var onDisk int64
	files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*"))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	if onDisk != written {
		t.Fatalf("%d B on disk, %d B counted as written", onDisk, written)
	}
	// The blobs the rebuilds list (what a bundle carries) are exactly the
	// blobs written.
	listed := map[string]bool{}
	for i, raw := range raws {
		c, _ := input.Canonical(raw)
		st, err := input.Store(bs, c)
		if err != nil || st.Written != 0 {
			t.Fatalf("turn %d stored again: %+v %v", i+1, st, err)
		}
		got, blobs, err := input.Rebuild(input.FromStore(bs), st.Ref)
		if err != nil || string(got) != string(c) {
			t.Fatalf("turn %d rebuild: %v", i+1, err)
		}
		for _, d := range blobs {
			listed[d] = true
		}
	}
	if len(listed) != len(files) {
		t.Fatalf("rebuilds list %d blobs, %d were written", len(listed), len(files))
	}
	for _, f := range files {
		if !listed["sha256:"+filepath.Base(f)] {
			t.Fatalf("blob %s written but listed by no rebuild", filepath.Base(f))
		}
	}
}

// BenchmarkStoreTurn stores a 28-turn session into a fresh store per
// iteration; ns/op is per turn.
func BenchmarkStoreTurn(b *testing.B) {
	raws := session(sessionTurns)
	canonical := make([][]byte, len(raws))
	for i, r := range raws {
		canonical[i], _ = input.Canonical(r)
	}
	for _, mode := range []string{"manifest", "whole"} {
		b.Run(mode, func(b *testing.B) {
			var written int64
			turns := 0
			for b.Loop() {
				b.StopTimer()
				bs := blob.New(b.TempDir())
				b.StartTimer()
				for _, c := range canonical {
					if mode == "whole" {
						// What Store does for a one-blob input.
						if cc, err := input.Canonical(c); err != nil || len(cc) != len(c) {
							b.Fatal(err)
						}
						if _, err := bs.Put(c); err != nil {
							b.Fatal(err)
						}
						written += int64(len(c))
					} else {
						st, err := input.Store(bs, c)
						if err != nil {
							b.Fatal(err)
						}
						written += st.Written
					}
					turns++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
			b.ReportMetric(float64(written)/float64(turns), "written-B/turn")
		})
	}
}
